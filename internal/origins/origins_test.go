package origins

import (
	"sync"
	"testing"
)

func TestOrigins(t *testing.T) {
	var o Origins
	a, b := Origin{Provider: "anthropic", Model: "m"}, Origin{Provider: "bedrock", Model: "m"}
	if o.Foreign("x", a) || o.Len() != 0 {
		t.Fatal("an unknown payload is nobody's")
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.Set(string(rune('a'+i)), a)
		}()
	}
	wg.Wait()
	if o.Len() != 8 || o.Foreign("a", a) || !o.Foreign("a", b) {
		t.Fatalf("recorded %d; foreign to its writer %v, to another %v", o.Len(), o.Foreign("a", a), o.Foreign("a", b))
	}
	if got, ok := o.Get("h"); !ok || got != a {
		t.Fatalf("Get: %v, %v", got, ok)
	}
}
