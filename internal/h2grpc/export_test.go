package h2grpc

// Idle is the number of pooled idle connections (for tests that wait for a call's connection
// to come back: a canceled call's goes back from its context hook, on its own goroutine).
func (t *Transport) Idle() int { return t.idle.Len() }
