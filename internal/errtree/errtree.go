// Package errtree reads an error tree (errors joined and wrapped through
// Unwrap() error and Unwrap() []error) without trusting it: a method that
// panics (a typed nil whose method dereferences its receiver, for
// instance) ends its branch instead of the caller. The core's overflow
// classifier and the langchaingo adapter's reader of LangChainGo's errors
// walk provider errors with it.
package errtree

// Error returns e.Error(), or ok false when the method panics.
func Error(e error) (s string, ok bool) {
	defer func() {
		if recover() != nil {
			s, ok = "", false
		}
	}()
	return e.Error(), true
}

// Unwrap returns what e unwraps to (one error, or many), or nothing when
// Unwrap panics or e wraps nothing.
func Unwrap(e error) (many []error, one error) {
	defer func() {
		if recover() != nil {
			many, one = nil, nil
		}
	}()
	switch u := e.(type) {
	case interface{ Unwrap() error }:
		return nil, u.Unwrap()
	case interface{ Unwrap() []error }:
		return u.Unwrap(), nil
	}
	return nil, nil
}

// HasChildren reports whether e wraps other errors (it implements Unwrap,
// whatever Unwrap returns).
func HasChildren(e error) bool {
	switch e.(type) {
	case interface{ Unwrap() error }, interface{ Unwrap() []error }:
		return true
	}
	return false
}

// Walk calls visit on err and on every error reachable from it, parents
// before children, until visit returns true or limit errors have been
// visited. At most limit errors wait to be visited at once; an Unwrap
// that panics ends its branch.
func Walk(err error, limit int, visit func(error) bool) {
	stack := []error{err}
	for n := 0; len(stack) > 0 && n < limit; n++ {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if e == nil {
			continue
		}
		if visit(e) {
			return
		}
		many, one := Unwrap(e)
		if one != nil {
			stack = append(stack, one)
		}
		many = many[:min(len(many), max(limit-len(stack), 0))]
		for i := len(many) - 1; i >= 0; i-- {
			stack = append(stack, many[i])
		}
	}
}
