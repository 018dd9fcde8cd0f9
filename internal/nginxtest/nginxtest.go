// Package nginxtest runs a real nginx (Debian's package) in front of a test's agents, so that
// the connector's clients meet a real reverse proxy: its keep-alive limits, its idle closes, its
// Connection: close and GOAWAY, its TLS, HTTP/1.1 and HTTP/2 (grpc_pass) as deployed.
//
// Each Start runs its own nginx process: `-p` and `-c` in the test's folder, `daemon off`, pid,
// logs and temporary files there too, listening on one random 127.x.y.z address (so that
// parallel tests and other processes never share its port), with a self-signed certificate made
// in-process for TLS. It is stopped when the test ends. The caller writes the http{} and
// server{} directives that matter to the test (keepalive_timeout, upstream, locations); the
// package writes the rest.
//
// Without nginx the test is skipped on a developer's machine and fails when CI=true, where a
// skipped test would hide a missing install step (.ci/run installs it when root).
//
// It refuses to be anything but a test helper: it never listens beyond loopback and must never
// be linked into a binary. Reading client socket states (ClientStates, WaitIdleClosed) needs
// Linux's /proc/net/tcp.
package nginxtest

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wait bounds every wait of this package on a condition: a start, a stop, a log line, a close.
// Generous on purpose, since the machines that run the tests are slow and shared; a condition
// met sooner ends the wait at once.
const wait = 20 * time.Second

// Options shape one nginx.
type Options struct {
	// TLS serves https with a self-signed certificate for the listening address (RootCAs trusts
	// it).
	TLS bool
	// HTTP2 adds http2 to the listen directive: with TLS, HTTP/2 by ALPN next to HTTP/1.1 (what
	// `listen 443 ssl http2` deployments do); without, HTTP/2 with prior knowledge only, which
	// a gRPC client speaks and an HTTP/1.1 client cannot.
	HTTP2 bool
	// HTTP holds directives for the http{} block, before the server: keepalive_timeout,
	// keepalive_requests, upstream blocks.
	HTTP string
	// Server holds directives for the server{} block: its locations.
	Server string
}

// Nginx is a running nginx.
type Nginx struct {
	// Addr is where it listens, "127.x.y.z:port".
	Addr string
	// URL is "http://" or "https://" + Addr.
	URL string
	// RootCAs trusts its certificate (nil without TLS).
	RootCAs *x509.CertPool
	// Dir is its prefix folder: nginx.conf, error.log, access.log.
	Dir string

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // the exit status, once done is closed
}

// Binary returns the nginx to run: A2AC_NGINX, else nginx on PATH, else /usr/sbin/nginx (where
// Debian puts it, often off a user's PATH). Without one it skips the test, or fails it when
// CI=true.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("A2AC_NGINX"); p != "" {
		return p
	}
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	const hint = "install it with `apt-get install -y nginx` (as root) or set A2AC_NGINX to an nginx binary"
	if os.Getenv("CI") == "true" {
		t.Fatalf("this test needs nginx and none was found (A2AC_NGINX, nginx on PATH, /usr/sbin/nginx): %s", hint)
	}
	t.Skipf("no nginx found (A2AC_NGINX, nginx on PATH, /usr/sbin/nginx); %s", hint)
	return ""
}

// Start runs an nginx shaped by o until the test ends, and returns once it accepts
// connections.
func Start(t testing.TB, o Options) *Nginx {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	// Another process may take the free port between our probe and nginx's bind; a new
	// address then is as good.
	for attempt := 1; ; attempt++ {
		n, err := start(t, bin, dir, o)
		if err == nil {
			return n
		}
		if attempt == 3 || !strings.Contains(err.Error(), "Address already in use") {
			t.Fatalf("nginxtest: %v", err)
		}
	}
}

func start(t testing.TB, bin, dir string, o Options) (*Nginx, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	n := &Nginx{Addr: addr, URL: "http://" + addr, Dir: dir, done: make(chan struct{})}
	var tlsLines string
	if o.TLS {
		host, _, _ := net.SplitHostPort(addr)
		if n.RootCAs, err = writeCert(dir, net.ParseIP(host)); err != nil {
			return nil, err
		}
		n.URL = "https://" + addr
		tlsLines = fmt.Sprintf("ssl_certificate %s;\n\t\tssl_certificate_key %s;\n",
			filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(n.config(o, tlsLines)), 0o600); err != nil {
		return nil, fmt.Errorf("write nginx.conf: %w", err)
	}
	// -e: the startup error log too, which would otherwise be /var/log/nginx/error.log.
	n.cmd = exec.Command(bin, "-p", dir+"/", "-c", conf, "-e", filepath.Join(dir, "error.log"))
	out, err := os.Create(filepath.Join(dir, "output.log"))
	if err != nil {
		return nil, fmt.Errorf("create output.log: %w", err)
	}
	defer out.Close()
	n.cmd.Stdout, n.cmd.Stderr = out, out
	n.cmd.SysProcAttr = sysProcAttr()
	if err := n.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		n.err = n.cmd.Wait()
		close(n.done)
	}()
	if err := n.waitListening(); err != nil {
		n.stop()
		return nil, fmt.Errorf("%w\nnginx.conf:\n%s\nerror.log:\n%s", err, n.config(o, tlsLines), n.ErrorLog())
	}
	t.Cleanup(func() {
		if err := n.stop(); err != nil {
			t.Errorf("nginxtest: %v\nerror.log:\n%s", err, n.ErrorLog())
		}
	})
	return n, nil
}

// LoopbackIP returns a random address in 127.0.0.0/8 other than 127.0.0.1 (which the kernel
// picks as the source of every loopback connection). A server listening there has its address
// to itself: no other test's server is on it, no client socket is bound to it, so the server can
// stop and listen on it again (a restarted agent) without an ephemeral port taking its place,
// and the connections to it are told apart by it.
func LoopbackIP() string {
	return net.IPv4(127, byte(1+rand.IntN(254)), byte(rand.IntN(256)), byte(1+rand.IntN(254))).String()
}

// freeAddr returns a LoopbackIP with a port free on it.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp4", net.JoinHostPort(LoopbackIP(), "0"))
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}

// config is the whole nginx.conf.
func (n *Nginx) config(o Options, tlsLines string) string {
	listen := n.Addr
	if o.TLS {
		listen += " ssl"
	}
	if o.HTTP2 {
		listen += " http2"
	}
	// As root, nginx would run its workers as nobody, who cannot enter the test's mode-700
	// folder for its temporary files.
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;"
	}
	d := n.Dir
	return fmt.Sprintf(`daemon off;
master_process on;
worker_processes 1;
%s
pid %s/nginx.pid;
error_log %s/error.log info;
events { worker_connections 1024; }
http {
	log_format nginxtest '$connection $connection_requests $status $request_method $request_uri';
	access_log %s/access.log nginxtest;
	client_body_temp_path %s/client_body;
	proxy_temp_path %s/proxy;
	fastcgi_temp_path %s/fastcgi;
	uwsgi_temp_path %s/uwsgi;
	scgi_temp_path %s/scgi;
	%s
	server {
		listen %s;
		%s
		%s
	}
}
`, user, d, d, d, d, d, d, d, d, o.HTTP, listen, tlsLines, o.Server)
}

// waitListening returns once nginx accepts a connection, or with why it never will.
func (n *Nginx) waitListening() error {
	deadline := time.Now().Add(wait)
	for {
		c, err := net.DialTimeout("tcp", n.Addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-n.done:
			return fmt.Errorf("nginx exited before listening on %s: %v", n.Addr, n.err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nginx not listening on %s after %s: %w", n.Addr, wait, err)
		}
	}
}

// stop ends nginx's processes: SIGTERM (the master stops its workers and exits), then SIGKILL
// to its process group past the bound.
func (n *Nginx) stop() error {
	select {
	case <-n.done:
		return errors.New("nginx exited before the test ended")
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
		return nil
	case <-time.After(wait):
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	<-n.done
	return fmt.Errorf("nginx did not stop within %s of SIGTERM; killed", wait)
}

// ErrorLog returns nginx's error log so far (what to show when a test fails).
func (n *Nginx) ErrorLog() string {
	b, err := os.ReadFile(filepath.Join(n.Dir, "error.log"))
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Request is one line of the access log: a request nginx has finished.
type Request struct {
	// Conn is nginx's serial number of the client connection; ConnRequests counts the requests
	// made on that connection so far, this one included.
	Conn, ConnRequests int
	Status             int
	Method, URI        string
}

// Requests returns the requests nginx has logged so far, in order.
func (n *Nginx) Requests() ([]Request, error) {
	f, err := os.Open(filepath.Join(n.Dir, "access.log"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Request
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 5 {
			return nil, fmt.Errorf("access.log line %q: want 5 fields", sc.Text())
		}
		var r Request
		var errs [3]error
		r.Conn, errs[0] = strconv.Atoi(fields[0])
		r.ConnRequests, errs[1] = strconv.Atoi(fields[1])
		r.Status, errs[2] = strconv.Atoi(fields[2])
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("access.log line %q: %w", sc.Text(), err)
		}
		r.Method, r.URI = fields[3], fields[4]
		out = append(out, r)
	}
	return out, sc.Err()
}

// WaitRequests waits until nginx has logged at least count requests and returns them. nginx
// logs a request after its last byte is sent, so a client may see the answer first.
func (n *Nginx) WaitRequests(t testing.TB, count int) []Request {
	t.Helper()
	var got []Request
	err := poll(t.Context(), func() (bool, error) {
		var err error
		got, err = n.Requests()
		return len(got) >= count, err
	})
	if err != nil {
		t.Fatalf("nginxtest: waiting for %d requests in access.log (have %d): %v", count, len(got), err)
	}
	return got
}

// poll calls cond every 10 ms until it is true or fails, for at most the package's bound.
func poll(ctx context.Context, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
			}
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
