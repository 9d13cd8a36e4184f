package beta

// api.go, sdk.go and summarizer.go are made from the GA package's files
// of the same names by renaming the SDK's types to their beta twins
// (rename.sed) and formatting the result, so that the two surfaces stay
// one (TestGenerated checks it); rename.sed heads each with Go's
// generated-code line, so that linters and duplicate finders pass them by:
//go:generate sh -c "sed -f rename.sed ../api.go | gofmt > api.go && sed -f rename.sed ../sdk.go | gofmt > sdk.go && sed -f rename.sed ../summarizer.go | gofmt > summarizer.go"
