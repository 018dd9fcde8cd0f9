package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// stack is the system under test, each part its own process: the stub agent, console-api and
// connector, all on loopback, against the database the caller named.
type stack struct {
	// connector serves HandleTurn: bin/connector, or with -via relay `loadgen relay` (named
	// "relay": its log is relay.log). Its CPU, RSS and log are the table's.
	agent, console, connector *child

	// replicas are the connector processes beyond the first (-replicas), on the same database;
	// running only for the rows that use them (startReplicas).
	replicas     []*child
	replicaAddrs []string
	// How the connector was started, for the replicas: its environment, binary, arguments and
	// name, and the folder of the logs.
	connectorEnv     []string
	viaPath, viaName string
	viaArgs          []string
	logDir           string
	agentURL         string // the stub agent's base URL (its card's url)
	agentGRPC        string // host:port of the stub agent's gRPC face
	// agentMTLS and agentTLS are host:port of the stub agent's TLS ports (the mtls and
	// apikey-tls rows'), "" when it serves none; pki is the run's private CA behind them.
	agentMTLS, agentTLS string
	pki                 pki
	grpcAddr            string // the connector's (or the relay's)
	// secrets are the credentials the stub agent checks (the API-key, OAuth2 and SigV4 rows).
	secrets stubSecrets
	// targets are the agent ids of the rows per binding and credential (-bindings,
	// -credentials), by target name.
	targets  map[string]string
	tenantID string
	agentID  string
	// consoleURL and adminToken let the run add tenants and set their caps (noisy.go).
	consoleURL, adminToken string
	tenantToken            string // the loadgen tenant's, for registering the targets
	pgRoot                 int    // the Postgres postmaster's pid, 0 when it is not on this machine
	childrens              []*child
}

// startStack migrates the database, starts the three programs, creates a tenant and registers
// the stub agent through the console API, as an operator and a tenant would.
func startStack(ctx context.Context, o options, logDir string, progress io.Writer) (s *stack, err error) {
	s = &stack{secrets: newStubSecrets(), targets: map[string]string{}}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	self, err := os.Executable()
	if err != nil {
		return s, fmt.Errorf("find own binary: %w", err)
	}
	connectorBin := filepath.Join(o.binDir, "connector")
	consoleBin := filepath.Join(o.binDir, "console-api")
	bins := []string{connectorBin, consoleBin}
	// The relay reads the connector's environment and logs its ready line, so it starts alike.
	viaName, viaPath, viaArgs := "connector", connectorBin, []string{"serve"}
	switch o.via {
	case viaRelay:
		viaName, viaPath, viaArgs, bins = "relay", self, []string{"relay"}, bins[1:]
	case viaHop:
		viaName, viaPath, viaArgs, bins = "relay", self, []string{"relay", "-lookup=false"}, bins[1:]
	}
	for _, b := range bins {
		if _, err := os.Stat(b); err != nil {
			return s, fmt.Errorf("%w (build them: go build -o %s ./cmd/connector ./cmd/console-api, or pass -bin)", err, o.binDir)
		}
	}

	key := make([]byte, 32)
	rand.Read(key)
	tok := make([]byte, 18)
	rand.Read(tok)
	adminToken := "loadgen-" + hex.EncodeToString(tok)
	env := childEnv(os.Environ(), map[string]string{
		"DATABASE_URL":             o.databaseURL,
		"A2AC_SECRET_KEY":          base64.StdEncoding.EncodeToString(key),
		"A2AC_ADMIN_TOKEN":         adminToken,
		"A2AC_CONSOLE_ADDR":        "127.0.0.1:0",
		"A2AC_GRPC_ADDR":           "127.0.0.1:0",
		"A2AC_ALLOW_INSECURE_HTTP": "true",              // the stub agent serves plain HTTP on loopback
		"A2AC_ALLOWED_CIDRS":       o.agentHost + "/32", // exactly the stub agent's address
		"A2AC_LOG_LEVEL":           "info",              // production's default
		// Below stopTimeout, so a stop (Ctrl-C in a long phase) ends in the connector's own
		// drain, not in a kill.
		"A2AC_SHUTDOWN_TIMEOUT": "10s",
		// The noisy-neighbour row sets a cap and waits for the connector to read it.
		"A2AC_LIMITS_REFRESH": limitsRefresh.String(),
		// The identity row's tokens name this issuer; nobody fetches its JWKS.
		"A2AC_IDENTITY_ISSUER": "https://loadgen.invalid",
		// The long-streams row measures what that many open streams cost one replica, all of
		// one tenant's one agent: the caps' defaults (8,000 per replica, a quarter of it per
		// tenant, half that per agent) would refuse most of them. The noisy-neighbour row sets
		// its own cap on its tenant through the admin API.
		"A2AC_MAX_TURNS":        strconv.Itoa(capsFor(o)),
		"A2AC_TENANT_MAX_TURNS": strconv.Itoa(capsFor(o)),
		"A2AC_AGENT_MAX_TURNS":  strconv.Itoa(capsFor(o)),
	})

	fmt.Fprintln(progress, "== console-api migrate")
	if err := runChild(ctx, "migrate", consoleBin, []string{"migrate"}, env, logDir); err != nil {
		return s, err
	}

	fmt.Fprintln(progress, "== starting stub agent, console-api, "+viaName+" (logs in "+logDir+")")
	var addr string
	agentEnv := childEnv(env, s.secrets.env())
	if slices.Contains(o.targetNames(), targetMTLS) || slices.Contains(o.targetNames(), targetAPIKeyTLS) {
		if s.pki, err = newPKI(o.agentHost); err != nil {
			return s, err
		}
		agentEnv = childEnv(agentEnv, s.pki.env())
	}
	s.agent, addr, err = startChild(ctx, "agent", self, []string{"agent", "-addr", o.agentHost + ":0"}, agentEnv, logDir,
		func(line []byte) string {
			rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("listening on "))
			if !ok {
				return ""
			}
			return string(rest)
		})
	if s.agent != nil {
		s.childrens = append(s.childrens, s.agent)
	}
	if err != nil {
		return s, err
	}
	s.agentURL, s.agentGRPC, s.agentMTLS, s.agentTLS = parseAgentAddrs(addr)
	s.console, addr, err = startChild(ctx, "console-api", consoleBin, []string{"serve"}, env, logDir, logAddr("console api listening"))
	if s.console != nil {
		s.childrens = append(s.childrens, s.console)
	}
	if err != nil {
		return s, err
	}
	consoleURL := "http://" + addr
	connectorEnv := env
	if o.debugAddr != "" {
		connectorEnv = append(slices.Clip(env), "A2AC_DEBUG_ADDR="+o.debugAddr)
	}
	s.connectorEnv, s.viaPath, s.viaName, s.viaArgs, s.logDir = env, viaPath, viaName, viaArgs, logDir
	s.connector, s.grpcAddr, err = startChild(ctx, viaName, viaPath, viaArgs, connectorEnv, logDir, logAddr("connector listening"))
	if s.connector != nil {
		s.childrens = append(s.childrens, s.connector)
	}
	if err != nil {
		return s, err
	}

	s.consoleURL, s.adminToken = consoleURL, adminToken
	if s.tenantID, s.agentID, s.tenantToken, err = s.addTenant(ctx, "loadgen"); err != nil {
		return s, err
	}
	for _, t := range o.targetNames() {
		if _, ok := s.targets[t]; ok {
			continue
		}
		if s.targets[t], err = s.addTarget(ctx, t); err != nil {
			return s, err
		}
	}
	s.pgRoot = postmasterPID(ctx, o.databaseURL)
	return s, nil
}

// addTarget registers the stub agent's face of a target for the loadgen tenant, with its
// credential, through the console API; the plain JSON-RPC target is the agent already there.
func (s *stack) addTarget(ctx context.Context, target string) (agentID string, err error) {
	if target == targetJSONRPC {
		return s.agentID, nil
	}
	body := map[string]any{"cardUrl": s.agentURL + "/" + target + "/.well-known/agent-card.json"}
	switch target {
	case targetAPIKey:
		body["apiKey"] = s.secrets.apiKey
	case targetIdentity:
		body["apiKey"] = s.secrets.apiKey
		body["callerIdentity"] = map[string]bool{"enabled": true}
	case targetOAuth2:
		body["credentials"] = map[string]any{"oauth2": map[string]any{"clientId": s.secrets.clientID, "clientSecret": s.secrets.clientSecret}}
	case targetSigV4:
		body["credentials"] = map[string]any{"awsSigV4": map[string]any{"accessKeyId": s.secrets.awsKeyID, "secretAccessKey": s.secrets.awsSecret, "region": sigv4Region}}
	case targetMTLS:
		body["cardUrl"] = "https://" + s.agentMTLS + "/mtls/.well-known/agent-card.json"
		body["credentials"] = map[string]any{"mtls": map[string]any{"certificatePem": s.pki.clientCert, "privateKeyPem": s.pki.clientKey}}
		body["tls"] = map[string]any{"caPem": s.pki.caPEM}
	case targetAPIKeyTLS:
		body["cardUrl"] = "https://" + s.agentTLS + "/apikey-tls/.well-known/agent-card.json"
		body["apiKey"] = s.secrets.apiKey
		body["tls"] = map[string]any{"caPem": s.pki.caPEM}
	}
	var agent struct{ ID string }
	if err := sendJSON(ctx, http.MethodPost, s.consoleURL+"/v1/agents", s.tenantToken, body, &agent); err != nil {
		return "", fmt.Errorf("register the stub agent's %s face: %w", target, err)
	}
	return agent.ID, nil
}

// tlsDirect is the direct side of the mtls or apikey-tls row: the bare client over TLS to that
// port, trusting the run's CA, with the client certificate on the mtls row, over HTTP/1.1 with
// keep-alive as the connector's transport (internal/h1 offers only http/1.1 in ALPN).
func (s *stack) tlsDirect(target string, maxConns int) (*directClient, error) {
	addr := s.agentTLS
	if target == targetMTLS {
		addr = s.agentMTLS
	}
	if addr == "" {
		return nil, fmt.Errorf("the stub agent serves no TLS port for the %s row", target)
	}
	cfg, err := s.pki.clientTLS(target == targetMTLS)
	if err != nil {
		return nil, err
	}
	c := newDirectClient("https://"+addr+"/"+target+"/", maxConns)
	tr := c.http.Transport.(*http.Transport)
	// A Transport with its own TLSClientConfig does not attempt HTTP/2 unless told to.
	tr.TLSClientConfig = cfg
	if target == targetAPIKeyTLS {
		c.header = http.Header{"X-Api-Key": {s.secrets.apiKey}}
	}
	return c, nil
}

// parseAgentAddrs reads the stub agent's ready line after "listening on ": its base URL, then
// "grpc HOST:PORT" and, when it serves them, "mtls HOST:PORT" and "tls HOST:PORT".
func parseAgentAddrs(line string) (url, grpcAddr, mtlsAddr, tlsAddr string) {
	f := strings.Fields(line)
	if len(f) > 0 {
		url = f[0]
	}
	for i := 1; i+1 < len(f); i += 2 {
		switch f[i] {
		case "grpc":
			grpcAddr = f[i+1]
		case "mtls":
			mtlsAddr = f[i+1]
		case "tls":
			tlsAddr = f[i+1]
		}
	}
	return url, grpcAddr, mtlsAddr, tlsAddr
}

// tokensIssued reads how many access tokens the stub agent's token endpoint has issued.
func (s *stack) tokensIssued(ctx context.Context) (int64, error) {
	return s.readCount(ctx, tokensPath)
}

// addTenant creates a tenant and registers the stub agent for it through the console API, as
// an operator and a tenant would.
func (s *stack) addTenant(ctx context.Context, name string) (tenantID, agentID, token string, err error) {
	var tenant struct{ ID, Token string }
	if err := sendJSON(ctx, http.MethodPost, s.consoleURL+"/v1/tenants", s.adminToken, map[string]string{"name": name}, &tenant); err != nil {
		return "", "", "", fmt.Errorf("create tenant: %w", err)
	}
	var agent struct{ ID string }
	if err := sendJSON(ctx, http.MethodPost, s.consoleURL+"/v1/agents", tenant.Token, map[string]string{"cardUrl": s.agentURL}, &agent); err != nil {
		return "", "", "", fmt.Errorf("register stub agent %s: %w", s.agentURL, err)
	}
	return tenant.ID, agent.ID, tenant.Token, nil
}

// addCappedTenant adds a tenant with the stub agent, whose concurrent-turn cap is n, and waits
// until every connector has read the cap (two A2AC_LIMITS_REFRESH).
func (s *stack) addCappedTenant(ctx context.Context, name string, n int) (tenantID, agentID string, err error) {
	if tenantID, agentID, _, err = s.addTenant(ctx, name); err != nil {
		return "", "", err
	}
	if err := s.setTenantCap(ctx, tenantID, n); err != nil {
		return "", "", err
	}
	if !sleepUntil(ctx, time.Now().Add(2*limitsRefresh)) {
		return "", "", ctx.Err()
	}
	return tenantID, agentID, nil
}

// setTenantCap sets the tenant's concurrent-turn cap through the admin API.
func (s *stack) setTenantCap(ctx context.Context, tenantID string, n int) error {
	var out struct{}
	err := sendJSON(ctx, http.MethodPatch, s.consoleURL+"/v1/tenants/"+tenantID, s.adminToken,
		map[string]any{"limits": map[string]any{"maxConcurrentTurns": n}}, &out)
	if err != nil {
		return fmt.Errorf("set the cap of tenant %s: %w", tenantID, err)
	}
	return nil
}

// stop ends every program, the connectors first (they hold the load), in reverse start order.
func (s *stack) stop() {
	s.stopReplicas()
	for i := len(s.childrens) - 1; i >= 0; i-- {
		s.childrens[i].stop()
	}
}

// startReplicas starts connector processes until n run (the first included), each as the
// first was started but without its debug server, on the same database: n replicas of one
// deployment. Their logs are connector-2.log and so on.
func (s *stack) startReplicas(ctx context.Context, n int) error {
	for i := len(s.replicas) + 2; i <= n; i++ {
		name := s.viaName + "-" + strconv.Itoa(i)
		c, addr, err := startChild(ctx, name, s.viaPath, s.viaArgs, s.connectorEnv, s.logDir, logAddr("connector listening"))
		if c != nil {
			s.replicas = append(s.replicas, c)
			s.replicaAddrs = append(s.replicaAddrs, addr)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// stopReplicas stops the replicas beyond the first, last started first.
func (s *stack) stopReplicas() {
	for i := len(s.replicas) - 1; i >= 0; i-- {
		s.replicas[i].stop()
	}
	s.replicas, s.replicaAddrs = nil, nil
}

// connectors are the connector processes running now, the first one first.
func (s *stack) connectors() []*child { return append([]*child{s.connector}, s.replicas...) }

// addrs are the gRPC addresses of connectors().
func (s *stack) addrs() []string { return append([]string{s.grpcAddr}, s.replicaAddrs...) }

// dead names a program that exited while it should be serving, or "".
func (s *stack) dead() string {
	for _, c := range append(slices.Clip(s.childrens), s.replicas...) {
		if c.exited() {
			return fmt.Sprintf("%s exited (%v); log: %s%s", c.name, c.err, c.log, tail(c.log))
		}
	}
	return ""
}

// childEnv is base without any setting of ours (so a developer's shell cannot change the
// measurement by accident), plus set. OTEL_*, GOGC, GOMAXPROCS and the rest pass through.
func childEnv(base []string, set map[string]string) []string {
	var env []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if k == "DATABASE_URL" || strings.HasPrefix(k, "A2AC_") {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// sendJSON sends body as JSON with a bearer token and decodes a 2xx answer into out.
func sendJSON(ctx context.Context, method, url, token string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(rb))
	}
	return json.Unmarshal(rb, out)
}

// postmasterPID finds the Postgres server's pid through a backend of it: the postmaster is
// every backend's parent. 0 when the database is not on this machine (or not readable), and the
// Postgres CPU column stays empty.
func postmasterPID(ctx context.Context, databaseURL string) int {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return 0
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var backend int
	if err := conn.QueryRow(ctx, "select pg_backend_pid()").Scan(&backend); err != nil {
		return 0
	}
	_, ppid, err := readStat(backend)
	if err != nil || ppid <= 1 {
		return 0
	}
	// The backend we asked is in this machine's process table only if the server is local
	// and in our pid namespace; check it really is a postgres process.
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", ppid))
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(comm)), "postgres") {
		return 0
	}
	return ppid
}

// agentPeak reads (and restarts) the stub agent's count of streams open at once.
func (s *stack) agentPeak(ctx context.Context) (int64, error) {
	return s.readCount(ctx, peakPath)
}

// readCount reads a number the stub agent serves at path.
func (s *stack) readCount(ctx context.Context, path string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.agentURL+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("agent %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64))
	if err != nil {
		return 0, fmt.Errorf("agent %s: %w", path, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("agent %s: %q: %w", path, b, err)
	}
	return n, nil
}

// analyze runs ANALYZE on the whole database.
func analyze(ctx context.Context, databaseURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "analyze"); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}

// capsFor is the connector's concurrent-turn caps in loadgen's stack: room for every long
// stream and every worker of the other rows, with margin.
func capsFor(o options) int {
	return max(o.longStreams, slices.Max(append([]int{0}, o.concurrency...))) + 1000
}
