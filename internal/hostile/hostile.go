// Package hostile is what the tests of both APIs throw at the live servers and how they judge
// the answers: hostile strings (NUL and other control characters, invalid UTF-8, userinfo URLs,
// huge and deeply nested values), byte-level mutations of a request, and Leaks, the oracle that
// finds internals an answer must never show (SQLSTATE, Go source positions, driver names,
// runtime panics, transport and parser wording).
//
// It is test support, imported only by tests. It holds no state; randomness comes from the
// *rand.Rand the caller seeds, so a failure replays from its seed.
package hostile

import (
	"math/rand/v2"
	"regexp"
	"strings"
)

// Password is the password every generated userinfo URL carries: no answer may ever contain it.
const Password = "s3cr3tpw-HOSTILE"

// leakPatterns are what no answer of either API may contain, whatever the request. Each is
// something only the server's insides could have put there.
var leakPatterns = []struct {
	name string
	re   *regexp.Regexp
}{
	{"SQLSTATE", regexp.MustCompile(`SQLSTATE`)},
	{"Postgres error text", regexp.MustCompile(`\bERROR: |invalid byte sequence for encoding|violates (unique|foreign key|check|not-null) constraint`)},
	{"Go source position", regexp.MustCompile(`[A-Za-z0-9_]+\.go:\d+`)},
	{"driver name", regexp.MustCompile(`(?i)\bpgx\b|pgconn|pgxpool|\bpostgres(ql)?\b|\blib/pq\b`)},
	{"runtime error", regexp.MustCompile(`runtime error|goroutine \d+|panic:|nil pointer dereference`)},
	{"transport wording", regexp.MustCompile(`dial tcp|dial udp|lookup \S+ on |read tcp|write tcp|connection reset by peer|broken pipe`)},
	{"parser wording", regexp.MustCompile(`net/url|parse "|invalid control character in URL|json: |Go struct field|Go value of type|proto: |grpc: |x509: |tls: `)},
}

// Leaks returns the names of the internals found in an answer (status message, body, header),
// nil when it is clean.
func Leaks(answer string) []string {
	var out []string
	for _, p := range leakPatterns {
		if p.re.MatchString(answer) {
			out = append(out, p.name+": "+p.re.FindString(answer))
		}
	}
	return out
}

// Seeds are hostile strings worth trying in every string member: each has broken a real API.
var Seeds = []string{
	"", " ", "a\x00b", "\x00", "a\x01b", "tab\there", "line\nbreak", "cr\rlf", "del\x7f", "c1\u0085",
	"\xff\xfe", "a\xc3", "\xed\xa0\x80", "\uFFFD", "\u202e\u0645", "emoji 😀", "中文", "%00", "\\u0000",
	"' OR 1=1 --", "\"; DROP TABLE tenants; --", "<script>alert(1)</script>", "${jndi:ldap://x}",
	"../../etc/passwd", "00000000-0000-0000-0000-000000000000", "NaN", "-1", "1e309",
	strings.Repeat("x", 257), strings.Repeat("é", 201), strings.Repeat("a", 16<<10+1), strings.Repeat("\x00", 64),
}

// String returns one hostile string: a seed, a random run of bytes, or a seed spliced into
// ordinary text.
func String(r *rand.Rand) string {
	switch r.IntN(5) {
	case 0, 1:
		return Seeds[r.IntN(len(Seeds))]
	case 2:
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return string(b)
	case 3:
		return "ok-" + Seeds[r.IntN(len(Seeds))] + "-ok"
	}
	return "plain-" + string(rune('a'+r.IntN(26)))
}

// Mutate returns a copy of b with one to three random edits: a byte flipped, a NUL or a byte
// that is never UTF-8 inserted, a span dropped, duplicated or cut off at the end.
func Mutate(r *rand.Rand, b []byte) []byte {
	out := append([]byte(nil), b...)
	for range 1 + r.IntN(3) {
		if len(out) == 0 {
			out = append(out, byte(r.IntN(256)))
			continue
		}
		i := r.IntN(len(out))
		switch r.IntN(6) {
		case 0:
			out[i] ^= byte(1 << r.IntN(8))
		case 1:
			out = append(out[:i], append([]byte{0}, out[i:]...)...)
		case 2:
			out = append(out[:i], append([]byte{0xff}, out[i:]...)...)
		case 3:
			j := i + r.IntN(len(out)-i+1)
			out = append(out[:i], out[j:]...)
		case 4:
			j := i + r.IntN(min(len(out)-i, 16)+1)
			out = append(out[:j], append(append([]byte(nil), out[i:j]...), out[j:]...)...)
		case 5:
			out = out[:i]
		}
	}
	return out
}
