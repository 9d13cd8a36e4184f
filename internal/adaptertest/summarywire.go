package adaptertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// extends checks that sum, the JSON body of a summary request, is last,
// the body of the request sent before it, with one element appended to
// its conversation (the array at key list) and the reply's cap set (the
// dotted keys caps): every element of last's conversation is there byte
// for byte, in order, and every other field is byte-identical. It returns
// the element appended.
func extends(last, sum []byte, list string, caps []string) ([]byte, error) {
	if last == nil {
		return nil, errors.New("no request before it")
	}
	var a, b map[string]json.RawMessage
	if err := json.Unmarshal(last, &a); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(sum, &b); err != nil {
		return nil, err
	}
	for _, c := range caps {
		if _, err := dropKey(a, c); err != nil {
			return nil, err
		}
		if found, err := dropKey(b, c); err != nil || !found {
			return nil, fmt.Errorf("the cap %s is not set (%v)", c, err)
		}
	}
	var la, lb []json.RawMessage
	if err := json.Unmarshal(a[list], &la); err != nil {
		return nil, fmt.Errorf("%s: %w", list, err)
	}
	if err := json.Unmarshal(b[list], &lb); err != nil {
		return nil, fmt.Errorf("%s: %w", list, err)
	}
	if len(lb) != len(la)+1 {
		return nil, fmt.Errorf("%d elements in %s after %d", len(lb), list, len(la))
	}
	for i := range la {
		if !bytes.Equal(la[i], lb[i]) {
			return nil, fmt.Errorf("%s[%d] differs: %s against %s", list, i, lb[i], la[i])
		}
	}
	delete(a, list)
	delete(b, list)
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		if !bytes.Equal(a[k], b[k]) {
			return nil, fmt.Errorf("%s differs: %s against %s", k, b[k], a[k])
		}
	}
	return lb[len(la)], nil
}

// dropKey deletes the dotted key from obj, an object's fields, rewriting
// the objects it is nested in (which are deleted when nothing is left in
// them), and reports whether it was there.
func dropKey(obj map[string]json.RawMessage, key string) (bool, error) {
	head, rest, nested := strings.Cut(key, ".")
	raw, ok := obj[head]
	if !ok {
		return false, nil
	}
	if !nested {
		delete(obj, head)
		return true, nil
	}
	var inner map[string]json.RawMessage
	if err := json.Unmarshal(raw, &inner); err != nil {
		return false, fmt.Errorf("%s: %w", head, err)
	}
	found, err := dropKey(inner, rest)
	if err != nil || !found {
		return found, err
	}
	if len(inner) == 0 {
		delete(obj, head)
		return true, nil
	}
	obj[head], err = json.Marshal(inner)
	return true, err
}

// listBytes returns the size of the array at key list in body, as sent.
func listBytes(body []byte, list string) int {
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(body, &obj)
	return len(obj[list])
}
