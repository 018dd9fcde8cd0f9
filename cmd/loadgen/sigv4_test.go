package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The SigV4 row's agent accepts what the direct side signs and refuses a changed body, a
// changed signed header, another secret and no signature: its check is real.
func TestSigV4RowChecksSignatures(t *testing.T) {
	t.Parallel()
	key := newAWSKey("AKIALOADGENTEST00001", "secret-1")
	verdicts := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		_, _ = body.ReadFrom(r.Body)
		verdicts <- key.verify(r, body.Bytes())
	}))
	t.Cleanup(srv.Close)
	send := func(signer *awsKey, signed, sent []byte, change func(*http.Request)) error {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/sigv4/", bytes.NewReader(sent))
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = int64(len(signed))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		if signer != nil {
			if err := signer.sign(req, signed); err != nil {
				t.Fatal(err)
			}
		}
		req.ContentLength = int64(len(sent))
		if change != nil {
			change(req)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return <-verdicts
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"message/stream"}`)
	if err := send(key, body, body, nil); err != nil {
		t.Fatalf("a signed call was refused: %v", err)
	}
	other := bytes.Replace(body, []byte(`"id":1`), []byte(`"id":2`), 1) // the same length
	for name, err := range map[string]error{
		"changed body":          send(key, body, other, nil),
		"changed signed header": send(key, body, body, func(r *http.Request) { r.Header.Set("Accept", "application/json") }),
		"other secret":          send(newAWSKey("AKIALOADGENTEST00001", "secret-2"), body, body, nil),
		"unsigned":              send(nil, body, body, nil),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
