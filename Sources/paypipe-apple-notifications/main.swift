import PaymentStages

// paypipe-apple-notifications: the endpoint Apple's merchant-token notifications reach
// (GET [/<merchantId>]/notification/merchantToken/<eventId>). Answers 200 once the event id is queued in
// merchant_token_events, 500 when it cannot be (Apple then retries). docs/merchant-tokens.md.
AppleNotificationsLaunch.run()
