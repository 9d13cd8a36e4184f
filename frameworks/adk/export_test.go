package adk

// Pending returns how many model calls c keeps figures for.
func Pending(c *Callbacks) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sent) + len(c.old)
}

// SetMaxPending sets how many model calls a generation of figures holds,
// until restore is called.
func SetMaxPending(n int) (restore func()) {
	was := maxPending
	maxPending = n
	return func() { maxPending = was }
}
