// Package sigv4test checks AWS Signature Version 4 signatures in tests with botocore (Debian's
// python3-botocore), an implementation nobody here wrote: a verifier process recomputes the
// signature of each request a test agent receives, the way an AWS service does, and refuses a
// wrong key, secret, region or service, a body or header changed after signing, and a stale
// X-Amz-Date.
//
// Without python3 and botocore the test is skipped on a developer's machine and fails when
// CI=true, where .ci/run installs them.
package sigv4test

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a2a-connector/a2a-connector/internal/credential"
)

//go:embed verify.py
var script []byte

// Python is the interpreter with botocore: Debian's, not one a developer's PATH may put first.
var python = "/usr/bin/python3"

// Verifier is a running botocore verifier for one AWS key. Its methods are safe for concurrent
// use; it stops when the test ends.
type Verifier struct {
	mu     sync.Mutex
	stdin  io.WriteCloser
	stdout *bufio.Reader

	mu2      sync.Mutex
	refusals []string
	accepted int
}

// Start runs a verifier that accepts signatures of key k made within maxSkew of now.
func Start(t testing.TB, k credential.AWSKey, maxSkew time.Duration) *Verifier {
	t.Helper()
	if err := exec.Command(python, "-c", "import botocore.auth").Run(); err != nil {
		msg := fmt.Sprintf("%s with botocore is needed (apt-get install python3-botocore): %v", python, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	path := t.TempDir() + "/verify.py"
	if err := os.WriteFile(path, script, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, python, path, k.AccessKeyID, k.Region, k.SigningService(), strconv.Itoa(int(maxSkew.Seconds())))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cancel()
		_ = cmd.Wait()
	})
	if _, err := fmt.Fprintf(stdin, "%s\n%s\n", k.SecretAccessKey, k.SessionToken); err != nil {
		t.Fatal(err)
	}
	return &Verifier{stdin: stdin, stdout: bufio.NewReader(stdout)}
}

// Check asks botocore whether the request (as received: method, absolute URL, headers with
// Host, body) carries a valid signature; the error says why not.
func (v *Verifier) Check(method, url string, h http.Header, body []byte) error {
	hs := make(map[string]string, len(h))
	for k, vs := range h {
		hs[k] = strings.Join(vs, ",")
	}
	line, err := json.Marshal(map[string]any{"method": method, "url": url, "headers": hs, "body": base64.StdEncoding.EncodeToString(body)})
	if err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, err := v.stdin.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("sigv4test: verifier: %w", err)
	}
	out, err := v.stdout.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("sigv4test: verifier: %w", err)
	}
	var got struct {
		OK     bool   `json:"ok"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		return fmt.Errorf("sigv4test: verifier answered %q", out)
	}
	v.mu2.Lock()
	defer v.mu2.Unlock()
	if !got.OK {
		v.refusals = append(v.refusals, got.Reason)
		return errors.New(got.Reason)
	}
	v.accepted++
	return nil
}

// Accepted is how many requests had a valid signature; Refusals the reasons of the others.
func (v *Verifier) Accepted() (int, []string) {
	v.mu2.Lock()
	defer v.mu2.Unlock()
	return v.accepted, append([]string(nil), v.refusals...)
}

// Handler answers requests without a valid signature 403 with AWS's JSON error
// ({"message": …}, as AgentCore does) and passes the others to next, with their body.
func (v *Verifier) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h := r.Header.Clone()
		h.Set("Host", r.Host)
		if r.ContentLength > 0 && h.Get("Content-Length") == "" {
			h.Set("Content-Length", strconv.FormatInt(r.ContentLength, 10))
		}
		if err := v.Check(r.Method, "http://"+r.Host+r.URL.RequestURI(), h, body); err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Amzn-ErrorType", "InvalidSignatureException")
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(map[string]string{"message": err.Error()})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// ServerOptions are the grpc-go server options that check every call's signature: the HTTP/2
// request POST https://{:authority}/{Service}/{Method}, with its metadata as headers and the
// payload hash the request names (UNSIGNED-PAYLOAD). A refusal is codes.Unauthenticated.
func (v *Verifier) ServerOptions() []grpc.ServerOption {
	check := func(ctx context.Context, method string) error {
		md, _ := metadata.FromIncomingContext(ctx)
		h := http.Header{}
		for k, vs := range md {
			if k == ":authority" {
				h.Set("Host", vs[0])
				continue
			}
			h[http.CanonicalHeaderKey(k)] = vs
		}
		if err := v.Check(http.MethodPost, "https://"+h.Get("Host")+method, h, nil); err != nil {
			return status.Error(codes.Unauthenticated, err.Error())
		}
		return nil
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if err := check(ctx, info.FullMethod); err != nil {
				return nil, err
			}
			return handler(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			if err := check(ss.Context(), info.FullMethod); err != nil {
				return err
			}
			return handler(srv, ss)
		}),
	}
}
