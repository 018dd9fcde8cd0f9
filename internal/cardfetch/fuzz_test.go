package cardfetch

import (
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzCheckURL: whatever a tenant pastes, CheckURL answers without panicking; what it accepts
// has a host and no userinfo or control characters; its refusals never quote the input; and
// RedactURL hides the userinfo url.Parse would find.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"https://agent.example.com", "https://user:s3cr3tpw@agent.example.com/card.json",
		"https://agent.example.com/\x00", "https://\xff/", "https://[::1]:443/a?b#c", "http://127.0.0.1:0",
		"https://例子.测试/.well-known/agent-card.json", "https://xn--fsqu00a.xn--0zwm56d/", "https://a_b.internal:8443/x",
		"https://h:99999/", "https://@h/", "https://h/%zz", "javascript:alert(1)", "//h/p",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := CheckURL(s)
		if parsed, perr := url.Parse(s); perr == nil && parsed.User != nil {
			if pw, ok := parsed.User.Password(); ok && len(pw) >= 4 && strings.Contains(RedactURL(s), pw) {
				t.Fatalf("RedactURL(%q) = %q shows the password", s, RedactURL(s))
			}
		}
		if err != nil {
			if u != nil {
				t.Fatal("a refused URL came back parsed")
			}
			if len(s) >= 16 && strings.Contains(err.Error(), s) {
				t.Fatalf("refusal %q quotes the input", err)
			}
			return
		}
		if u.User != nil || u.Hostname() == "" || strings.ContainsFunc(s, unicode.IsControl) || !utf8.ValidString(s) {
			t.Fatalf("CheckURL(%q) accepted %#v", s, u)
		}
		if sch := strings.ToLower(u.Scheme); sch != "https" && sch != "http" {
			t.Fatalf("CheckURL(%q) accepted scheme %q", s, u.Scheme)
		}
	})
}
