import EdgeAgentCLI
EdgeAgentCLI.main(CommandLine.arguments)
