// AwaitResult publishes one PayPipe payment job, waits for its result on paypipe.results by correlation id, and
// verifies its webhook (docs/job-contract.md "Receiving results"). It uses RabbitMQ's Java client as Debian packages
// it (librabbitmq-client-java: /usr/share/java/amqp-client.jar, which logs through slf4j) and the JDK alone:
//
//   CP=/usr/share/java/amqp-client.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-nop.jar
//   javac -cp "$CP" -d out examples/java/AwaitResult.java
//   java -cp "$CP:out" AwaitResult --token token.json --merchant-id sandbox-merchant --webhook-secret whsec_... \
//        --job-id order-1-a1 --amount 1000 --currency GBP [--timeout 120] [--amqp-url URL]
//
// Prints one JSON line; exit 0 when both the result and the verified webhook arrived, 1 when not within --timeout,
// 64 usage, 65 bad input, 69 broker unavailable.
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.Date;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

public final class AwaitResult {
    /** Standard Webhooks: refuse timestamps this far from now (replays). */
    static final long TOLERANCE_SECONDS = 300;

    static void fail(int code, String message) {
        System.err.println("AwaitResult: " + message);
        System.exit(code);
    }

    /** True when one of webhook-signature's v1 signatures is HMAC-SHA256(secret, "id.timestamp.body"). */
    static boolean verify(String secret, String id, String timestamp, String signatures, byte[] body) throws Exception {
        if (id == null || timestamp == null || signatures == null || !timestamp.matches("[0-9]{1,18}")) return false;
        if (Math.abs(System.currentTimeMillis() / 1000 - Long.parseLong(timestamp)) > TOLERANCE_SECONDS) return false;
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(Base64.getDecoder().decode(secret.replaceFirst("^whsec_", "")), "HmacSHA256"));
        mac.update((id + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8));
        byte[] expected = Base64.getEncoder().encode(mac.doFinal(body));
        for (String candidate : signatures.split(" ")) {
            if (candidate.startsWith("v1,") && MessageDigest.isEqual(expected, candidate.substring(3).getBytes(StandardCharsets.UTF_8))) return true;
        }
        return false;
    }

    static String quoted(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    public static void main(String[] arguments) throws Exception {
        Map<String, String> options = new HashMap<>();
        for (int index = 0; index + 1 < arguments.length; index += 2) {
            if (!arguments[index].startsWith("--")) fail(64, "unexpected " + arguments[index]);
            options.put(arguments[index].substring(2), arguments[index + 1]);
        }
        String amqpUrl = options.getOrDefault("amqp-url", System.getenv().getOrDefault("PAYPIPE_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2f"));
        String secret = options.getOrDefault("webhook-secret", System.getenv("PAYPIPE_WEBHOOK_SECRET"));
        String jobId = options.get("job-id"), merchantId = options.get("merchant-id"), tokenFile = options.get("token");
        String amount = options.get("amount"), currency = options.get("currency");
        if (arguments.length % 2 != 0 || jobId == null || merchantId == null || tokenFile == null || secret == null
                || amount == null || !amount.matches("[1-9][0-9]*") || currency == null || !currency.matches("[A-Z]{3}")) {
            fail(64, "usage: AwaitResult --token FILE --merchant-id ID --webhook-secret whsec_... --job-id ID --amount MINOR --currency ABC [--timeout SECONDS] [--amqp-url URL]");
        }
        long started = System.nanoTime();
        long deadline = started + TimeUnit.SECONDS.toNanos(Long.parseLong(options.getOrDefault("timeout", "120")));
        String token = null;
        try {
            token = Files.readString(Path.of(tokenFile)).trim();
        } catch (IOException error) {
            fail(65, tokenFile + ": " + error.getMessage());
        }

        // Our webhook endpoint: verified events' webhook-id go to the queue, others get 401.
        LinkedBlockingQueue<String> webhookIds = new LinkedBlockingQueue<>();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/webhook", exchange -> {
            byte[] body = exchange.getRequestBody().readAllBytes();
            var headers = exchange.getRequestHeaders();
            boolean verified;
            try {
                verified = verify(secret, headers.getFirst("webhook-id"), headers.getFirst("webhook-timestamp"), headers.getFirst("webhook-signature"), body);
            } catch (Exception error) {
                verified = false;
            }
            if (verified) webhookIds.add(headers.getFirst("webhook-id"));
            exchange.sendResponseHeaders(verified ? 204 : 401, -1);
            exchange.close();
        });
        server.start();
        String notifyUrl = "http://127.0.0.1:" + server.getAddress().getPort() + "/webhook";
        String job = "{\"jobId\":" + quoted(jobId) + ",\"merchantId\":" + quoted(merchantId) + ",\"orderReference\":" + quoted(jobId)
                + ",\"amount\":{\"value\":" + amount + ",\"currency\":" + quoted(currency) + "},\"applePayToken\":" + token
                + ",\"notifyUrl\":" + quoted(notifyUrl) + "}";

        ConnectionFactory factory = new ConnectionFactory();
        Connection connection = null;
        try {
            factory.setUri(amqpUrl);
            connection = factory.newConnection();
        } catch (Exception error) {
            fail(69, "connect: " + error);
        }
        Channel channel = connection.createChannel();
        // Our own queue, bound to one merchant's results BEFORE publishing, so the result cannot pass by unseen. Named
        // `<user>.…` as scripts/broker-permissions' reader role requires; `payment.*.<merchantId>` is exact even when
        // merchant ids contain dots.
        String userInfo = URI.create(amqpUrl).getRawUserInfo();
        String user = userInfo == null ? "guest" : URLDecoder.decode(userInfo.split(":", 2)[0], StandardCharsets.UTF_8);
        String queue = channel.queueDeclare(user + ".result-" + jobId, false, true, true, null).getQueue();
        channel.queueBind(queue, "paypipe.results", "payment.*." + merchantId);

        // The job, as docs/job-contract.md says: persistent, message_id = jobId, timestamp = now, mandatory, confirmed.
        channel.confirmSelect();
        boolean[] returned = {false};
        channel.addReturnListener(message -> returned[0] = true);
        AMQP.BasicProperties jobProperties = new AMQP.BasicProperties.Builder()
                .contentType("application/json").deliveryMode(2).messageId(jobId).timestamp(new Date()).build();
        channel.basicPublish("paypipe.jobs", "payment.requested", true, jobProperties, job.getBytes(StandardCharsets.UTF_8));
        try {
            channel.waitForConfirmsOrDie(30_000);
        } catch (Exception error) {
            fail(69, "job not confirmed: " + error);
        }
        if (returned[0]) fail(69, "job unroutable");

        // The message whose correlation_id is our jobId; the merchant's other results are skipped.
        GetResponse result = null;
        while (result == null && System.nanoTime() < deadline) {
            GetResponse response = channel.basicGet(queue, true);
            if (response == null) {
                Thread.sleep(200);
            } else if (jobId.equals(response.getProps().getCorrelationId())) {
                result = response;
            }
        }
        String seconds;
        if (result == null) {
            seconds = String.format(java.util.Locale.ROOT, "%.2f", (System.nanoTime() - started) / 1e9);
            System.out.println("{\"jobId\":" + quoted(jobId) + ",\"result\":false,\"seconds\":" + seconds + "}");
            System.exit(1);
        }
        // The webhook of the same event: its webhook-id is the result's message_id (the event id, for deduplication).
        String eventId = result.getProps().getMessageId();
        boolean verified = false;
        while (!verified && System.nanoTime() < deadline) {
            String id = webhookIds.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            verified = eventId.equals(id);
        }
        connection.close();
        server.stop(0);
        Map<String, Object> headers = result.getProps().getHeaders();
        seconds = String.format(java.util.Locale.ROOT, "%.2f", (System.nanoTime() - started) / 1e9);
        System.out.println("{\"jobId\":" + quoted(jobId) + ",\"type\":" + quoted(String.valueOf(headers.get("type")))
                + ",\"eventId\":" + quoted(eventId) + ",\"paymentId\":" + quoted(String.valueOf(headers.get("paymentId")))
                + ",\"webhookVerified\":" + verified + ",\"seconds\":" + seconds + "}");
        System.exit(verified ? 0 : 1);
    }
}
