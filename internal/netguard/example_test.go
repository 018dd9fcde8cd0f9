package netguard_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

// One client per purpose, built once from configuration and shared. Refusals arrive as errors
// from Do, matched with errors.Is.
func ExampleNewClient() {
	allowed, err := netguard.ParseCIDRs("127.0.0.0/8") // A2AC_ALLOWED_CIDRS in local dev
	if err != nil {
		fmt.Println(err)
		return
	}
	policy := netguard.Policy{AllowedCIDRs: allowed}

	// Card fetches: a few redirects, bounded header wait.
	cards := netguard.NewClient(policy, netguard.ClientOptions{MaxRedirects: 3, ResponseHeaderTimeout: 10 * time.Second})
	// Agent calls stream SSE: no redirects, no header timeout; the turn's context bounds them.
	agents := netguard.NewClient(policy, netguard.ClientOptions{})
	_ = agents

	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet,
		"https://169.254.169.254/latest/meta-data/", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := cards.Do(req)
	switch {
	case errors.Is(err, netguard.ErrBlockedAddress):
		fmt.Println("refused: private address")
	case errors.Is(err, netguard.ErrInsecureURL):
		fmt.Println("refused: insecure URL")
	case err != nil:
		fmt.Println("unreachable")
	default:
		resp.Body.Close()
	}
	// Output: refused: private address
}

func ExamplePolicy_CheckAddr() {
	var p netguard.Policy
	fmt.Println(p.CheckAddr(netip.MustParseAddr("169.254.169.254")))
	fmt.Println(p.CheckAddr(netip.MustParseAddr("::ffff:10.0.0.1")))
	fmt.Println(p.CheckAddr(netip.MustParseAddr("8.8.8.8")))
	// Output:
	// blocked address 169.254.169.254: link-local cloud metadata address; to allow it add 169.254.169.254/32 to A2AC_ALLOWED_CIDRS
	// blocked address ::ffff:10.0.0.1: IPv4-mapped IPv6 address (::ffff:0:0/96); to allow it add 10.0.0.1/32 to A2AC_ALLOWED_CIDRS
	// <nil>
}
