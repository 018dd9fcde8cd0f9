package h1

// IdleConns reports how many connections t's pool holds, for tests that wait for a drained
// connection to reach it instead of guessing how long that takes.
func (t *Transport) IdleConns() int {
	t.idle.mu.Lock()
	defer t.idle.mu.Unlock()
	return t.idle.n
}
