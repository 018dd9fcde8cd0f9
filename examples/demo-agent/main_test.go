package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// syncBuffer is stderr shared by run's goroutines and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

var listeningRE = regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`)

func TestRun_serves_until_the_context_ends(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-chunk-delay", "1ms"}, env(map[string]string{"DEMO_AGENT_API_KEY": "k"}), &stderr)
	}()

	var addr string
	for addr == "" {
		if m := listeningRE.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run ended early: %v; stderr: %s", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/.well-known/agent.json", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var card struct {
		URL          string   `json:"url"`
		Security     []string `json:"security"`
		Capabilities struct {
			Extensions []struct {
				URI string `json:"uri"`
			} `json:"extensions"`
		} `json:"capabilities"`
	}
	err = json.NewDecoder(resp.Body).Decode(&card)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var extensions []string
	for _, e := range card.Capabilities.Extensions {
		extensions = append(extensions, e.URI)
	}
	type cardSummary struct {
		URL        string
		Security   []string
		Extensions []string // the voice extension is on by default
	}
	want := cardSummary{URL: "http://" + addr + "/a2a/demo/v1", Security: []string{"apiKey"}, Extensions: []string{"urn:a2a-connector:voice:v1"}}
	if diff := cmp.Diff(want, cardSummary{card.URL, card.Security, extensions}); diff != "" {
		t.Errorf("card (-want +got):\n%s", diff)
	}

	body := `{"jsonrpc":"2.0","id":"1","method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m","parts":[{"kind":"text","text":"1加2"}]}}}`
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodPost, card.URL, strings.NewReader(body))
	req.Header.Set("X-API-KEY", "k")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out a2aclient.Response
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if err != nil || out.Error != nil || !strings.Contains(string(out.Result), "1与2相加等于3") {
		t.Errorf("message/send: err %v, response %+v %s", err, out.Error, out.Result)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
	if !strings.Contains(stderr.String(), "shutting down") {
		t.Errorf("stderr lacks the shutdown line: %s", stderr.String())
	}
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    config
		wantErr string
	}{
		{
			name: "defaults",
			want: config{addr: "127.0.0.1:9999", chunkDelay: 120 * time.Millisecond, voiceExtension: "urn:a2a-connector:voice:v1"},
		},
		{
			name: "environment",
			env:  map[string]string{"DEMO_AGENT_ADDR": ":8000", "DEMO_AGENT_PUBLIC_URL": "https://agent.example.com/", "DEMO_AGENT_API_KEY": "k", "DEMO_AGENT_CHUNK_DELAY": "0s"},
			want: config{addr: ":8000", publicURL: "https://agent.example.com", apiKey: "k", voiceExtension: "urn:a2a-connector:voice:v1"},
		},
		{
			name: "empty_voice_extension_env_turns_it_off",
			env:  map[string]string{"DEMO_AGENT_VOICE_EXTENSION": ""},
			want: config{addr: "127.0.0.1:9999", chunkDelay: 120 * time.Millisecond},
		},
		{
			name: "voice_extension_flag_wins_over_environment",
			args: []string{"-voice-extension", "urn:example:voice:v2"},
			env:  map[string]string{"DEMO_AGENT_VOICE_EXTENSION": ""},
			want: config{addr: "127.0.0.1:9999", chunkDelay: 120 * time.Millisecond, voiceExtension: "urn:example:voice:v2"},
		},
		{
			name: "empty_voice_extension_flag_turns_it_off",
			args: []string{"-voice-extension="},
			want: config{addr: "127.0.0.1:9999", chunkDelay: 120 * time.Millisecond},
		},
		{
			name: "flags_win_over_environment",
			args: []string{"-addr", "127.0.0.1:1", "-chunk-delay", "5ms", "-public-url", "http://demo:9999"},
			env:  map[string]string{"DEMO_AGENT_ADDR": ":8000", "DEMO_AGENT_CHUNK_DELAY": "1s"},
			want: config{addr: "127.0.0.1:1", publicURL: "http://demo:9999", chunkDelay: 5 * time.Millisecond, voiceExtension: "urn:a2a-connector:voice:v1"},
		},
		{name: "voice_extension_with_a_comma", args: []string{"-voice-extension", "urn:a,urn:b"}, wantErr: "-voice-extension"},
		{name: "bad_env_delay", env: map[string]string{"DEMO_AGENT_CHUNK_DELAY": "soon"}, wantErr: "DEMO_AGENT_CHUNK_DELAY"},
		{name: "negative_delay", args: []string{"-chunk-delay", "-1s"}, wantErr: "-chunk-delay"},
		{name: "relative_public_url", args: []string{"-public-url", "agent.example.com"}, wantErr: "-public-url"},
		{name: "public_url_with_query", args: []string{"-public-url", "https://a.example/?x=1"}, wantErr: "-public-url"},
		{name: "stray_argument", args: []string{"serve"}, wantErr: "unexpected argument"},
		{name: "unknown_flag", args: []string{"-port", "1"}, wantErr: "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			got, err := parseConfig(tt.args, env(tt.env), &stderr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(config{})); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}
