package beta

// api.go, sdk.go and summarizer.go are made from the GA package's files
// of the same names by renaming the SDK's types to their beta twins
// (rename.sed, which also heads them with Go's "Code generated ... DO NOT
// EDIT." line) and formatting the result, so that the two surfaces stay
// one (TestGenerated checks it); edit the GA files and run go generate:
//go:generate sh -c "sed -f rename.sed ../api.go | gofmt > api.go && sed -f rename.sed ../sdk.go | gofmt > sdk.go && sed -f rename.sed ../summarizer.go | gofmt > summarizer.go"
