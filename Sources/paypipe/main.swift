import Foundation

// Temporary dispatcher: the lead replaces this file with the full `paypipe` command set.
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "token" {
    exit(TokenCommand.run(arguments: Array(arguments.dropFirst())))
}
print("paypipe")
