print("paypipe")
