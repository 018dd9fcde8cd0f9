package main

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
	"github.com/a2a-connector/a2a-connector/internal/testca"
)

// An agent behind a private CA, registered through the console: its card over HTTPS and its
// gRPC interface over TLS (the card writes a bare address, so TLS since the card came over
// https), both with certificates of a CA made by the test, plus an authenticated extended card.
// Without A2AC_AGENT_CA_FILE the card cannot be fetched (502 card_unreachable, reason tls); with
// it the card is fetched, the extended card comes over gRPC TLS with the API key, and a test
// turn converses.
func TestRegisterAnAgentBehindAPrivateCA(t *testing.T) {
	t.Parallel()
	ca := testca.New(t)
	const key = "sk-private-ca"
	peer := sdkagent.NewV03(t, sdkagent.OptionsV03{TLS: ca.ServerTLS(t), GRPCBareAddress: true, APIKey: key, ExtendedSkill: "storm_warnings"})
	caFile := ca.File(t)

	for _, tc := range []struct {
		name    string
		caFile  string
		trusted bool
	}{{"without_the_setting", "", false}, {"with_A2AC_AGENT_CA_FILE", caFile, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &consoleStack{admin: "admin-token-private-ca-0123456789", client: &http.Client{Timeout: time.Minute}}
			s.base = "http://" + openConsole(t, map[string]string{
				"DATABASE_URL":       testDB.URL,
				"A2AC_SECRET_KEY":    base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, 32)),
				"A2AC_ADMIN_TOKEN":   s.admin,
				"A2AC_LOG_LEVEL":     "error",
				"A2AC_ALLOWED_CIDRS": "127.0.0.0/8",
				"A2AC_AGENT_CA_FILE": tc.caFile,
			}, io.Discard).Addr()
			_, token := s.newTenant(t, "private-ca "+tc.name)
			register := map[string]string{"cardUrl": peer.CardURL, "apiKey": key}
			if !tc.trusted {
				m := s.call(t, "POST", "/v1/agents", token, register, http.StatusBadGateway)
				if m["code"] != "card_unreachable" || m["reason"] != "tls" {
					t.Errorf("answer %v, want card_unreachable for tls", m)
				}
				return
			}
			a := s.call(t, "POST", "/v1/agents", token, register, http.StatusCreated)
			if a["endpointUrl"] != peer.GRPCURL || a["endpointBinding"] != "GRPC" {
				t.Errorf("endpoint %v %v, want GRPC at %s", a["endpointBinding"], a["endpointUrl"], peer.GRPCURL)
			}
			var skills []string
			for _, sk := range a["skills"].([]any) {
				skills = append(skills, sk.(map[string]any)["id"].(string))
			}
			if !slices.Contains(skills, "storm_warnings") {
				t.Errorf("skills %v, want the extended card's; warnings %v", skills, a["warnings"])
			}
			res := s.call(t, "POST", "/v1/agents/"+a["id"].(string)+"/test", token, map[string]string{"text": "weather please"}, http.StatusOK)
			if res["outcome"] != "COMPLETED" {
				t.Errorf("test turn: %v", res)
			}
		})
	}
}
