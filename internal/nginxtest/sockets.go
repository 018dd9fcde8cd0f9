package nginxtest

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// tcpStates names the states of /proc/net/tcp's st column (include/net/tcp_states.h).
var tcpStates = map[string]string{
	"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2",
	"06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING",
}

// ClientStates returns the state of every TCP socket on this machine whose peer is Addr: the
// client ends of the connections to this nginx (its address is its own, so they are this
// test's). A connection nginx has closed and the client has not shows as CLOSE_WAIT.
func (n *Nginx) ClientStates() ([]string, error) {
	want, err := netip.ParseAddrPort(n.Addr)
	if err != nil {
		return nil, err
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return nil, fmt.Errorf("read client socket states (Linux only): %w", err)
	}
	defer f.Close()
	var states []string
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 {
			continue
		}
		remote, err := parseProcAddr(fields[2])
		if err != nil {
			return nil, fmt.Errorf("/proc/net/tcp line %q: %w", sc.Text(), err)
		}
		if remote != want {
			continue
		}
		st, ok := tcpStates[fields[3]]
		if !ok {
			st = "state " + fields[3]
		}
		states = append(states, st)
	}
	return states, sc.Err()
}

// parseProcAddr reads an IPv4 "ADDR:PORT" of /proc/net/tcp: the address is the in-memory
// (network order) 32 bits printed as a native-endian number, the port a plain hex number.
func parseProcAddr(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || len(a) != 8 {
		return netip.AddrPort{}, fmt.Errorf("address %q is not IPv4 ADDR:PORT", s)
	}
	raw, err := hex.DecodeString(a)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: %w", s, err)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port %q: %w", s, err)
	}
	var ip [4]byte
	binary.NativeEndian.PutUint32(ip[:], binary.BigEndian.Uint32(raw))
	return netip.AddrPortFrom(netip.AddrFrom4(ip), uint16(port)), nil
}

// WaitIdleClosed waits until no client connection to nginx is open from nginx's side: every
// socket whose peer is Addr is gone or past ESTABLISHED (CLOSE_WAIT when nginx closed it and
// the client has not noticed). It is how a test knows that nginx's keepalive_timeout has
// fired, whatever the machine's speed.
func (n *Nginx) WaitIdleClosed(t testing.TB) {
	t.Helper()
	n.waitStates(t, "nginx to close the idle connections", "ESTABLISHED")
}

// WaitReleased waits until the client has closed its end of every connection to nginx: no
// socket whose peer is Addr is ESTABLISHED or CLOSE_WAIT (closed by nginx, still held by the
// client).
func (n *Nginx) WaitReleased(t testing.TB) {
	t.Helper()
	n.waitStates(t, "the client to release its connections", "ESTABLISHED", "CLOSE_WAIT")
}

// waitStates waits until no client socket to nginx is in one of states.
func (n *Nginx) waitStates(t testing.TB, what string, states ...string) {
	t.Helper()
	var have []string
	err := poll(t.Context(), func() (bool, error) {
		var err error
		have, err = n.ClientStates()
		if err != nil {
			return false, err
		}
		return !slices.ContainsFunc(have, func(s string) bool { return slices.Contains(states, s) }), nil
	})
	if err != nil {
		t.Fatalf("nginxtest: waiting for %s to %s (client sockets: %v): %v", what, n.Addr, have, err)
	}
}
