package responses

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// benchItems is an agent transcript of a reasoning model: about a thousand
// items of every client-side tool type, some built with param.Override.
func benchItems() []Item {
	data := make([]byte, 300)
	for i := range data {
		data[i] = byte(i*37 + i*i*11)
	}
	return genAgent(data)
}

// BenchmarkTrim trims the transcript to 30% of its size: conversion, the
// core's trim and the mapping back.
func BenchmarkTrim(b *testing.B) {
	items := benchItems()
	hist, _ := ToHistory(items)
	budget := history.Estimate(hist, nil) * 3 / 10
	b.ReportAllocs()
	b.ReportMetric(float64(len(items)), "items")
	for b.Loop() {
		if _, _, err := Trim(items, budget); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToHistory is the conversion alone.
func BenchmarkToHistory(b *testing.B) {
	items := benchItems()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ToHistory(items); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCoreTrim is the core's trim of the converted history, for
// comparison.
func BenchmarkCoreTrim(b *testing.B) {
	hist, _ := ToHistory(benchItems())
	budget := history.Estimate(hist, nil) * 3 / 10
	b.ReportAllocs()
	for b.Loop() {
		if _, err := history.TrimToRecentTurns(hist, budget); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadTypedOutput reads a typed function_call_output: its
// fields, no JSON.
func BenchmarkReadTypedOutput(b *testing.B) {
	u := functionOutput("c1", strings.Repeat("func f() { return 42 }\n", 30))
	for b.Loop() {
		read(&u)
	}
}

// BenchmarkReadOverrideOutput reads the same output built with
// param.Override, through its JSON (wire.go).
func BenchmarkReadOverrideOutput(b *testing.B) {
	u := overrideItem(`{"type":"function_call_output","call_id":"c1","output":` + quote(strings.Repeat("func f() { return 42 }\n", 30)) + `}`)
	for b.Loop() {
		read(&u)
	}
}

// BenchmarkReadToParamReasoning reads a reasoning item as ToParam
// returns it: an override of the variant.
func BenchmarkReadToParamReasoning(b *testing.B) {
	r := param.Override[responses.ResponseReasoningItemParam](json.RawMessage(`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"` + strings.Repeat("q8Zr", 300) + `"}`))
	u := Item{OfReasoning: &r}
	for b.Loop() {
		read(&u)
	}
}

// BenchmarkReadShellCall reads a typed shell call, whose action is
// counted as its JSON.
func BenchmarkReadShellCall(b *testing.B) {
	u := shellCall("s1", "go test ./...")
	for b.Loop() {
		read(&u)
	}
}
