package sigv4_test

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/sigv4"
	"github.com/a2a-connector/a2a-connector/internal/sigv4/sigv4test"
)

var key = credential.AWSKey{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	SessionToken: "FwoGZXIvYXdzEXAMPLESESSIONTOKEN+/=", Region: "eu-west-1"}

// TestBotocoreAgrees signs requests of every shape the connector sends and has botocore
// recompute each signature; then it changes one thing the signature covers and expects a
// refusal, so the check cannot pass by accepting everything.
func TestBotocoreAgrees(t *testing.T) {
	t.Parallel()
	v := sigv4test.Start(t, key, 5*time.Minute)
	now := time.Now
	body := []byte(`{"jsonrpc":"2.0","id":"1","method":"message/send","params":{"message":{"parts":[{"kind":"text","text":"hé"}]}}}`)
	build := func(method, url string, body []byte) *http.Request {
		var r *http.Request
		if body == nil {
			r, _ = http.NewRequest(method, url, nil)
		} else {
			r, _ = http.NewRequest(method, url, bytes.NewReader(body))
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "text/event-stream")
		r.Header.Set("A2A-Version", "1.0")
		r.Header["X-A2a-Extensions"] = []string{"https://a.example/ext/1", "https://b.example/ext/2"}
		r.Header["Idempotency-Key"] = nil // not on the wire: must not be signed
		return r
	}
	check := func(r *http.Request, body []byte) error {
		h := r.Header.Clone()
		for k, vs := range h {
			if len(vs) == 0 {
				delete(h, k)
			}
		}
		host := r.Host
		if host == "" {
			host = r.URL.Host
		}
		h.Set("Host", host)
		if r.ContentLength > 0 {
			h.Set("Content-Length", strconv.FormatInt(r.ContentLength, 10)) // as the wire carries it
		}
		return v.Check(r.Method, r.URL.Scheme+"://"+host+r.URL.RequestURI(), h, body)
	}
	for _, tc := range []struct {
		name, method, url string
		body              []byte
	}{
		{"jsonrpc_post", http.MethodPost, "http://127.0.0.1:8080/a2a", body},
		{"rest_path_with_colon", http.MethodPost, "http://127.0.0.1:8080/v1/message:stream", body},
		{"rest_get_with_query", http.MethodGet, "http://127.0.0.1:8080/v1/tasks/t-1?historyLength=3&a=b%20c", nil},
		{"card_get_escaped_path", http.MethodGet, "https://bedrock-agentcore.eu-west-1.amazonaws.com/runtimes/arn%3Aaws%3Abedrock-agentcore%3Aeu-west-1%3A1%3Aruntime%2Fx/invocations/.well-known/agent-card.json?qualifier=DEFAULT", nil},
		{"https_default_port", http.MethodPost, "https://agent.example:443/a2a", body},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sigv4.New(&key, now)
			r := build(tc.method, tc.url, tc.body)
			if err := s.Sign(r, tc.body); err != nil {
				t.Fatal(err)
			}
			if err := check(r, tc.body); err != nil {
				t.Fatalf("botocore refused a request signed by the connector: %v", err)
			}
			if tc.body != nil {
				tampered := bytes.Replace(tc.body, []byte("hé"), []byte("hi"), 1)
				if err := check(r, tampered); err == nil {
					t.Error("a body changed after signing was accepted")
				}
			}
			r2 := r.Clone(r.Context())
			r2.Header.Set("A2A-Version", "0.3")
			if err := check(r2, tc.body); err == nil {
				t.Error("a signed header changed after signing was accepted")
			}
		})
	}
	t.Run("wrong_secret_region_service_or_stale_date_refused", func(t *testing.T) {
		for name, k := range map[string]credential.AWSKey{
			"secret":  {AccessKeyID: key.AccessKeyID, SecretAccessKey: key.SecretAccessKey + "x", SessionToken: key.SessionToken, Region: key.Region},
			"region":  {AccessKeyID: key.AccessKeyID, SecretAccessKey: key.SecretAccessKey, SessionToken: key.SessionToken, Region: "us-east-1"},
			"service": {AccessKeyID: key.AccessKeyID, SecretAccessKey: key.SecretAccessKey, SessionToken: key.SessionToken, Region: key.Region, Service: "execute-api"},
			"token":   {AccessKeyID: key.AccessKeyID, SecretAccessKey: key.SecretAccessKey, Region: key.Region},
		} {
			r := build(http.MethodPost, "http://127.0.0.1:8080/a2a", body)
			if err := sigv4.New(&k, now).Sign(r, body); err != nil {
				t.Fatal(err)
			}
			if err := check(r, body); err == nil {
				t.Errorf("a request signed with the wrong %s was accepted", name)
			}
		}
		r := build(http.MethodPost, "http://127.0.0.1:8080/a2a", body)
		stale := func() time.Time { return time.Now().Add(-20 * time.Minute) }
		if err := sigv4.New(&key, stale).Sign(r, body); err != nil {
			t.Fatal(err)
		}
		if err := check(r, body); err == nil || !strings.Contains(err.Error(), "expired") {
			t.Errorf("a signature 20 minutes old: %v, want refused as expired", err)
		}
	})
	t.Run("resign_replaces_the_previous_signature", func(t *testing.T) {
		r := build(http.MethodPost, "http://127.0.0.1:8080/a2a", body)
		s := sigv4.New(&key, func() time.Time { return time.Now().Add(-20 * time.Minute) })
		if err := s.Sign(r, body); err != nil {
			t.Fatal(err)
		}
		if err := sigv4.New(&key, now).Sign(r, body); err != nil {
			t.Fatal(err)
		}
		if err := check(r, body); err != nil {
			t.Fatalf("re-signed request refused: %v", err)
		}
	})
	t.Run("unsigned_payload_as_grpc_signs_it", func(t *testing.T) {
		r, _ := http.NewRequest(http.MethodPost, "https://127.0.0.1:9443/a2a.v1.A2AService/SendMessage", nil)
		r.Header.Set("Content-Type", "application/grpc")
		r.Header.Set(sigv4.ContentSHA256Header, sigv4.UnsignedPayload)
		if err := sigv4.New(&key, now).Sign(r, nil); err != nil {
			t.Fatal(err)
		}
		if err := check(r, []byte("\x00\x00\x00\x00\x05hello")); err != nil {
			t.Fatalf("botocore refused an UNSIGNED-PAYLOAD request: %v", err)
		}
	})
	if n, _ := v.Accepted(); n == 0 {
		t.Fatal("botocore accepted nothing")
	}
}

// BenchmarkSign is the cost SigV4 adds to one agent request: a JSON-RPC turn's POST of ~1 KiB.
func BenchmarkSign(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 1024)
	s := sigv4.New(&key, nil)
	r, _ := http.NewRequest(http.MethodPost, "https://agent.example/a2a", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "text/event-stream")
	r.Header["Idempotency-Key"] = nil
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Sign(r, body); err != nil {
			b.Fatal(err)
		}
	}
}
