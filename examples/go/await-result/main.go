// await-result publishes one PayPipe payment job, waits for its result on paypipe.results by correlation id, and
// verifies its webhook (docs/job-contract.md "Receiving results"). It uses github.com/rabbitmq/amqp091-go, built
// from Debian's golang-github-rabbitmq-amqp091-go-dev in GOPATH mode, offline:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o await-result ./examples/go/await-result
//	./await-result -token token.json -merchant-id sandbox-merchant -webhook-secret whsec_... -job-id order-1-a1 \
//	               -amount 1000 -currency GBP [-timeout 120s] [-amqp-url URL]
//
// Prints one JSON line; exit 0 when both the result and the verified webhook arrived, 1 when not within -timeout,
// 64 usage, 65 bad input, 69 broker unavailable.
package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Standard Webhooks: refuse timestamps this far from now (replays).
const tolerance = 5 * time.Minute

type webhook struct {
	id    string
	event map[string]interface{}
}

func fail(code int, format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "await-result: "+format+"\n", args...)
	os.Exit(code)
}

// verify is true when one of webhook-signature's v1 signatures is HMAC-SHA256(secret, "id.timestamp.body").
func verify(secret string, header http.Header, body []byte) bool {
	id, timestamp, signatures := header.Get("webhook-id"), header.Get("webhook-timestamp"), header.Get("webhook-signature")
	seconds, err := strconv.ParseInt(timestamp, 10, 64)
	if id == "" || signatures == "" || err != nil {
		return false
	}
	if age := time.Since(time.Unix(seconds, 0)); age > tolerance || age < -tolerance {
		return false
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(body)
	expected := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, candidate := range strings.Split(signatures, " ") {
		if strings.HasPrefix(candidate, "v1,") && hmac.Equal([]byte(strings.TrimPrefix(candidate, "v1,")), []byte(expected)) {
			return true
		}
	}
	return false
}

// listen serves POST /webhook on an ephemeral loopback port; verified events go to the channel, others get 401.
func listen(secret string) (string, <-chan webhook) {
	received := make(chan webhook, 16)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(69, "listen: %v", err)
	}
	go http.Serve(listener, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var event map[string]interface{}
		if err != nil || !verify(secret, r.Header, body) || json.Unmarshal(body, &event) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		received <- webhook{r.Header.Get("webhook-id"), event}
		w.WriteHeader(http.StatusNoContent)
	}))
	return "http://" + listener.Addr().String() + "/webhook", received
}

func main() {
	tokenFile := flag.String("token", "", "an Apple Pay token JSON file (`paypipe token mint --out`)")
	jobID := flag.String("job-id", "", "the job id (idempotency key, and the correlation id of its result)")
	merchantID := flag.String("merchant-id", "", "the PayPipe merchant id")
	secret := flag.String("webhook-secret", os.Getenv("PAYPIPE_WEBHOOK_SECRET"), "the merchant's whsec_… webhook secret")
	amount := flag.Int64("amount", 0, "minor units")
	currency := flag.String("currency", "", "ISO 4217 alpha-3")
	timeout := flag.Duration("timeout", 120*time.Second, "how long to wait for the result and the webhook")
	amqpURL := flag.String("amqp-url", os.Getenv("PAYPIPE_AMQP_URL"), "the broker")
	flag.Parse()
	if *tokenFile == "" || *jobID == "" || *merchantID == "" || *secret == "" || *amount <= 0 || len(*currency) != 3 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(64)
	}
	if *amqpURL == "" {
		*amqpURL = "amqp://guest:guest@127.0.0.1:5672/%2f"
	}
	started := time.Now()
	deadline := started.Add(*timeout)
	token, err := os.ReadFile(*tokenFile)
	if err != nil || !json.Valid(token) {
		fail(65, "%s: not a JSON token", *tokenFile)
	}
	notifyURL, webhooks := listen(*secret)
	job, _ := json.Marshal(map[string]interface{}{
		"jobId": *jobID, "merchantId": *merchantID, "orderReference": *jobID,
		"amount":        map[string]interface{}{"value": *amount, "currency": *currency},
		"applePayToken": json.RawMessage(token),
		"notifyUrl":     notifyURL,
	})

	connection, err := amqp.Dial(*amqpURL)
	if err != nil {
		fail(69, "connect: %v", err)
	}
	defer connection.Close()
	channel, err := connection.Channel()
	if err != nil {
		fail(69, "channel: %v", err)
	}
	// Our own queue, bound to one merchant's results BEFORE publishing, so the result cannot pass by unseen. Named
	// `<user>.…` as scripts/broker-permissions' reader role requires; `payment.*.<merchantId>` is exact even when
	// merchant ids contain dots.
	user := "guest"
	if parsed, err := url.Parse(*amqpURL); err == nil && parsed.User != nil {
		user = parsed.User.Username()
	}
	queue, err := channel.QueueDeclare(user+".result-"+*jobID, false, true, true, false, nil)
	if err == nil {
		err = channel.QueueBind(queue.Name, "payment.*."+*merchantID, "paypipe.results", false, nil)
	}
	if err != nil {
		fail(69, "results queue: %v", err)
	}
	deliveries, err := channel.Consume(queue.Name, "", true, true, false, false, nil)
	if err != nil {
		fail(69, "consume: %v", err)
	}

	// The job, as docs/job-contract.md says: persistent, message_id = jobId, timestamp = now, mandatory, confirmed.
	if err := channel.Confirm(false); err != nil {
		fail(69, "confirm mode: %v", err)
	}
	returns := channel.NotifyReturn(make(chan amqp.Return, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	confirmation, err := channel.PublishWithDeferredConfirmWithContext(ctx, "paypipe.jobs", "payment.requested", true, false, amqp.Publishing{
		ContentType: "application/json", DeliveryMode: amqp.Persistent, MessageId: *jobID, Timestamp: time.Now(), Body: job,
	})
	if err != nil || !confirmation.Wait() {
		fail(69, "job not confirmed: %v", err)
	}
	select {
	case returned := <-returns:
		fail(69, "job unroutable: %s", returned.ReplyText)
	default:
	}

	// The message whose correlation_id is our jobId; the merchant's other results are skipped.
	var result *amqp.Delivery
	wait := time.NewTimer(time.Until(deadline))
	for result == nil {
		select {
		case delivery, ok := <-deliveries:
			if !ok {
				fail(69, "results consumer closed")
			}
			if delivery.CorrelationId == *jobID {
				result = &delivery
			}
		case <-wait.C:
			fmt.Printf("{\"jobId\":%q,\"result\":false,\"seconds\":%.2f}\n", *jobID, time.Since(started).Seconds())
			os.Exit(1)
		}
	}
	// The webhook of the same event: its webhook-id is the result's message_id (the event id, for deduplication).
	verified := false
	for !verified {
		select {
		case received := <-webhooks:
			verified = received.id == result.MessageId
		case <-wait.C:
			fmt.Printf("{\"jobId\":%q,\"eventId\":%q,\"webhookVerified\":false,\"seconds\":%.2f}\n", *jobID, result.MessageId, time.Since(started).Seconds())
			os.Exit(1)
		}
	}
	summary, _ := json.Marshal(map[string]interface{}{
		"jobId": *jobID, "type": result.Headers["type"], "eventId": result.MessageId, "paymentId": result.Headers["paymentId"],
		"webhookVerified": verified, "seconds": float64(time.Since(started).Milliseconds()) / 1000,
	})
	fmt.Println(string(summary))
}
