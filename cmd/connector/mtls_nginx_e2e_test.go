package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/agents"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/nginxtest"
	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
	"github.com/a2a-connector/a2a-connector/internal/testca"
)

// Agents behind nginx with `ssl_verify_client on` (Debian's nginx, its certificate its own
// self-signed CA: a private CA given as tls.caPem), on every binding: nginx proxies the card
// (rewriting the agent's own URLs to its own with sub_filter), JSON-RPC and HTTP+JSON over
// HTTP/1.1, and gRPC with grpc_pass. Registered with credentials.mtls and tls.caPem, each
// turn through the connector's HandleTurn completes; no A2AC_AGENT_CA_FILE anywhere.
func TestAgentsBehindNginxWithClientCertificates(t *testing.T) {
	t.Parallel()
	nginxtest.Binary(t)
	clientCA := testca.New(t)
	caFile := clientCA.File(t)
	certPEM, keyPEM := clientCA.ClientCert(t, "connector", testca.ClientOptions{})
	s := startStack(t, map[string]string{})
	svc := s.registrar.agentsService(t)

	for _, b := range []struct {
		name string
		o    sdkagent.Options
	}{
		{"JSONRPC", sdkagent.Options{}},
		{"HTTP+JSON", sdkagent.Options{RESTOnly: true}},
		{"GRPC", sdkagent.Options{GRPCOnly: true}},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			o := b.o
			o.Streaming, o.MTLS = true, true
			peer := sdkagent.New(t, o)
			httpUp := strings.TrimPrefix(peer.Origin, "http://")
			n := nginxtest.Start(t, nginxtest.Options{TLS: true, HTTP2: true,
				HTTP:   "keepalive_timeout 60s;\n\tupstream agent { server " + httpUp + "; keepalive 8; }",
				Server: mtlsLocations(caFile, peer, httpUp)})
			nginxCA, err := os.ReadFile(filepath.Join(n.Dir, "cert.pem"))
			if err != nil {
				t.Fatal(err)
			}
			cardURL := n.URL + strings.TrimPrefix(peer.CardURL, peer.Origin)
			a, _, err := svc.RegisterAgent(t.Context(), s.tenant, cardURL, agents.Registration{TLSCAPem: string(nginxCA),
				Credential: &credential.Credential{Kind: connector.CredentialKindMTLS,
					MTLS: &credential.ClientCert{CertificatePEM: string(certPEM), PrivateKeyPEM: string(keyPEM)}}})
			if err != nil {
				t.Fatalf("register through nginx: %v\nerror.log:\n%s", err, n.ErrorLog())
			}
			if !strings.HasPrefix(a.EndpointURL, n.URL) || bindingName(a.EndpointBinding) != b.name {
				t.Fatalf("endpoint %s %s, want nginx's (%s) on %s", a.EndpointBinding, a.EndpointURL, n.URL, b.name)
			}
			for i := range 2 {
				r := s.turn(t, fmt.Sprintf("nginx-mtls-%d", i), a.ID, "weather please")
				if r.final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED || !strings.Contains(strings.Join(r.deltas, ""), "sunny") {
					t.Fatalf("turn %d: %v %v %q\nerror.log:\n%s", i, r.final.GetOutcome(), r.final.GetError(), r.deltas, n.ErrorLog())
				}
			}
		})
	}
}

// mtlsLocations is the server{} of nginx in front of peer: client certificates of the CA in
// caFile required; the card rewritten to name nginx; HTTP calls proxied over HTTP/1.1 to
// httpUp ("agent" upstream), gRPC calls passed to the agent's gRPC port.
func mtlsLocations(caFile string, peer *sdkagent.Server, httpUp string) string {
	grpcFilter := ""
	if peer.GRPCURL != "" {
		grpcFilter = "sub_filter '" + peer.GRPCURL + "' 'https://$server_addr:$server_port';"
	}
	conf := fmt.Sprintf(`ssl_verify_client on;
		ssl_client_certificate %s;
		location = %s {
			proxy_pass http://agent;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Accept-Encoding "";
			sub_filter_types application/json;
			sub_filter_once off;
			sub_filter 'http://%s' 'https://$server_addr:$server_port';
			%s
		}
		location /a2a/ {
			proxy_pass http://agent;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_buffering off;
		}`, caFile, strings.TrimPrefix(peer.CardURL, peer.Origin), httpUp, grpcFilter)
	if peer.GRPCURL != "" {
		conf += fmt.Sprintf(`
		location / {
			grpc_pass grpc://%s;
		}`, strings.TrimPrefix(peer.GRPCURL, "http://"))
	}
	return conf
}
