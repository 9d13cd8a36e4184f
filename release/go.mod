module github.com/histrim/history/release

go 1.24

require (
	github.com/histrim/history v0.1.0
	golang.org/x/mod v0.32.0
)
