// Command failoverdrill runs the connector through a real Postgres failover and measures what the
// dialog engine sees (scripts/e2e-failover.sh, `make e2e-failover`, which starts etcd and two
// Postgres nodes under Patroni first and passes them in).
//
// It migrates the database, registers the demo agent (served in this process), starts the real
// connector binary on a multi-host DATABASE_URL with target_session_attrs=read-write, and keeps
// steady load on it: workers sending turns that complete, and workers opening holds (the demo
// agent's add flow asks a question). Then, in order:
//
//  1. kill -9 of the primary's postgres alone: Patroni, still holding the leader key, restarts
//     it in place (crash recovery);
//  2. kill -9 of the primary's Patroni and postgres: the leader key expires and Patroni promotes
//     the synchronous standby (a failover);
//  3. the old primary's Patroni is started again: it rejoins as a replica (pg_rewind when it
//     must), read-only.
//
// For each it reports how long turns failed, and at the end whether every hold confirmed to the
// engine (INPUT_REQUIRED with a hold in the Final) still routes its session's next turn to the
// held task. It exits non-zero when a hold was lost, when turns failed while the old primary
// rejoined, or when turns did not recover within -recovery-bound. It is a drill, not a unit
// test: it needs Patroni, etcd and about two minutes, so `make test` does not run it.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/agents"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/pgpool"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/store"
	"github.com/a2a-connector/a2a-connector/migrations"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "failoverdrill:", err)
		os.Exit(1)
	}
}

// options are the drill's flags.
type options struct {
	connector     string
	nodes         []node
	startNode     []string
	logDir        string
	workers       int
	holdWorkers   int
	settle        time.Duration
	recoveryBound time.Duration
}

// node is one Postgres under Patroni.
type node struct {
	name    string
	pg      string // host:port
	rest    string // Patroni REST API base URL
	data    string // data directory (postmaster.pid)
	config  string // Patroni configuration file
	pidfile string // Patroni's pid
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("failoverdrill", flag.ContinueOnError)
	fs.StringVar(&o.connector, "connector", "", "the connector binary")
	fs.Func("node", "a Postgres node: name=,pg=host:port,rest=URL,data=DIR,config=FILE,pidfile=FILE (twice)", func(s string) error {
		n, err := parseNode(s)
		o.nodes = append(o.nodes, n)
		return err
	})
	startNode := fs.String("start-node", "patroni", "the command that starts a node's Patroni (its configuration file is appended)")
	fs.StringVar(&o.logDir, "log-dir", os.TempDir(), "where the connector's and restarted nodes' logs go")
	fs.IntVar(&o.workers, "workers", 8, "concurrent sessions sending turns that complete")
	fs.IntVar(&o.holdWorkers, "hold-workers", 2, "concurrent sessions opening holds")
	fs.DurationVar(&o.settle, "settle", 5*time.Second, "steady load before each fault, and after turns recovered")
	fs.DurationVar(&o.recoveryBound, "recovery-bound", 90*time.Second, "longest wait for turns to succeed again after a fault")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.startNode = strings.Fields(*startNode)
	switch {
	case o.connector == "":
		return o, errors.New("-connector is required")
	case len(o.nodes) != 2:
		return o, fmt.Errorf("-node: %d given, want 2", len(o.nodes))
	case len(o.startNode) == 0:
		return o, errors.New("-start-node is empty")
	}
	return o, nil
}

func parseNode(s string) (node, error) {
	var n node
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "name":
			n.name = v
		case "pg":
			n.pg = v
		case "rest":
			n.rest = v
		case "data":
			n.data = v
		case "config":
			n.config = v
		case "pidfile":
			n.pidfile = v
		default:
			return n, fmt.Errorf("-node %q: unknown key %q", s, k)
		}
	}
	if n.name == "" || n.pg == "" || n.rest == "" || n.data == "" || n.config == "" || n.pidfile == "" {
		return n, fmt.Errorf("-node %q: name, pg, rest, data, config and pidfile are all required", s)
	}
	return n, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	primary, err := waitRole(ctx, o.nodes, "primary", time.Minute)
	if err != nil {
		return err
	}
	hosts := o.nodes[0].pg + "," + o.nodes[1].pg
	databaseURL := "postgres://postgres@" + hosts + "/a2ac?sslmode=disable&target_session_attrs=read-write&connect_timeout=2&application_name=" + drillApp
	if err := createDatabase(ctx, "postgres://postgres@"+primary.pg+"/postgres?sslmode=disable", databaseURL); err != nil {
		return err
	}

	// Every turn makes a task: the demo agent must remember all of them, or the check of the
	// holds would find tasks it forgot rather than holds the connector lost.
	demo := agent.New(agent.Options{MaxTasks: 1 << 22, MaxContexts: 1 << 22})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	agentSrv := &http.Server{Handler: demo.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = agentSrv.Serve(ln) }()
	defer agentSrv.Close()

	key := make([]byte, 32)
	rand.Read(key)
	tenant, agentID, err := register(ctx, databaseURL, key, "http://"+ln.Addr().String()+agent.CardPath)
	if err != nil {
		return err
	}
	conn, stopConnector, err := startConnector(ctx, o, databaseURL, key)
	if err != nil {
		return err
	}
	defer conn.Close()
	defer stopConnector()

	l := newLoad(pb.NewConnectorClient(conn), tenant, agentID)
	l.start(ctx, o.workers, o.holdWorkers)
	defer l.stop()
	d := &drill{o: o, load: l, out: stdout, demo: demo}
	return d.run(ctx)
}

// drillApp is the application_name of the connector's connections, to find them on a node.
const drillApp = "a2ac-failoverdrill"

// createDatabase creates the drill's database on the primary and migrates it through the
// multi-host URL (which must find the primary).
func createDatabase(ctx context.Context, adminURL, databaseURL string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to the primary: %w", err)
	}
	_, err = conn.Exec(ctx, "create database a2ac")
	conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	conn, err = pgx.Connect(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("connect through the multi-host URL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := migrations.Apply(ctx, conn); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// register creates a tenant and registers the demo agent as the console does: the card is
// fetched and validated for real, with the key the connector runs with.
func register(ctx context.Context, databaseURL string, key []byte, cardURL string) (tenant, agentID string, err error) {
	pool, err := pgpool.Open(ctx, databaseURL, pgpool.Options{})
	if err != nil {
		return "", "", err
	}
	defer pool.Close()
	st := store.New(pool.Pool)
	t, err := st.CreateTenant(ctx, "failover drill")
	if err != nil {
		return "", "", fmt.Errorf("create tenant: %w", err)
	}
	box, err := secret.New(key)
	if err != nil {
		return "", "", err
	}
	svc := agents.New(agents.Config{Store: st, Secrets: box, Cards: cardfetch.New(cardfetch.Options{
		Client: netguard.NewClient(netguard.Policy{AllowInsecureHTTP: true,
			AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, netguard.ClientOptions{MaxRedirects: 3}),
		AllowInsecureHTTP: true,
	})})
	a, _, err := svc.Register(ctx, t.ID, cardURL, "")
	if err != nil {
		return "", "", fmt.Errorf("register %s: %w", cardURL, err)
	}
	return t.ID, a.ID, nil
}

// startConnector runs the connector binary and returns a gRPC connection to it once it is
// serving, and a function that stops it (SIGTERM, then waits).
func startConnector(ctx context.Context, o options, databaseURL string, key []byte) (*grpc.ClientConn, func(), error) {
	logFile, err := os.Create(filepath.Join(o.logDir, "connector.log"))
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(o.connector, "serve")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+databaseURL,
		"A2AC_SECRET_KEY="+base64.StdEncoding.EncodeToString(key),
		// The kernel chooses the port and the connector logs it (at info): a port picked here
		// and bound by the connector later could be taken meanwhile.
		"A2AC_GRPC_ADDR=127.0.0.1:0",
		"A2AC_ALLOW_INSECURE_HTTP=true",
		"A2AC_ALLOWED_CIDRS=127.0.0.0/8",
		"A2AC_LOG_LEVEL=info",
		"A2AC_TURN_TIMEOUT=10s",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, nil, fmt.Errorf("start the connector: %w", err)
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		logFile.Close()
	}
	deadline := time.Now().Add(time.Minute)
	var addr string
	for ; addr == ""; time.Sleep(50 * time.Millisecond) {
		addr = loggedAddr(logFile.Name(), "connector listening")
		if addr == "" && (time.Now().After(deadline) || ctx.Err() != nil) {
			stop()
			return nil, nil, fmt.Errorf("the connector never said it listened (log: %s)", logFile.Name())
		}
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		stop()
		return nil, nil, err
	}
	health := healthpb.NewHealthClient(conn)
	for ; ; time.Sleep(50 * time.Millisecond) {
		res, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		if err == nil && res.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return conn, stop, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			conn.Close()
			stop()
			return nil, nil, fmt.Errorf("the connector did not become healthy (log: %s): %v", logFile.Name(), err)
		}
	}
}

// loggedAddr is the addr of the first JSON log line of the file at path whose msg is msg, or "".
func loggedAddr(path, msg string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == msg {
			return rec.Addr
		}
	}
	return ""
}

// waitRole waits until one of nodes answers its Patroni role endpoint (/primary, /replica,
// /sync) with 200, and returns it.
func waitRole(ctx context.Context, nodes []node, role string, bound time.Duration) (node, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(bound); ; time.Sleep(100 * time.Millisecond) {
		for _, n := range nodes {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.rest+"/"+role, nil)
			if err != nil {
				return node{}, err
			}
			res, err := client.Do(req)
			if err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					return n, nil
				}
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return node{}, fmt.Errorf("no node became %s within %s", role, bound)
		}
	}
}

// readPid reads the first line of a pid file (postmaster.pid, Patroni's).
func readPid(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return pid, nil
}

// kill9 sends SIGKILL to the process in pidfile.
func kill9(pidfile string) error {
	pid, err := readPid(pidfile)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill -9 %d (%s): %w", pid, pidfile, err)
	}
	return nil
}
