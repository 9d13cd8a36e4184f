// Package sdktest holds only tests: the LangChainGo adapter's overflow
// classification driven by LangChainGo's Google AI model (llms/googleai),
// whose modules (generative-ai-go, google.golang.org/api, gRPC) the adapter
// itself does not require. It is its own module so that the adapter's
// go.mod stays free of them.
package sdktest
