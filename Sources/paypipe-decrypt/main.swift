print("decrypt")
