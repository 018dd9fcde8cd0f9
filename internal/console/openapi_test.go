package console

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOpenAPIMatchesRoutes keeps openapi.json true: every registered route is documented and
// every documented operation is registered, and the served document is the embedded one.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Errorf("openapi = %q, want 3.1.x", doc.OpenAPI)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method, op := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
			var o struct {
				Security  *[]map[string][]string     `json:"security"`
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(op, &o); err != nil || o.Security == nil || len(o.Responses) == 0 {
				t.Errorf("%s %s: needs security and responses", method, path)
			}
		}
	}
	s := New(Config{})
	var registered []string
	for _, rt := range s.routes {
		registered = append(registered, rt.method+" "+rt.path)
	}
	slices.Sort(documented)
	slices.Sort(registered)
	if diff := cmp.Diff(registered, documented); diff != "" {
		t.Errorf("routes (-registered +documented):\n%s", diff)
	}

	e := newEnv(t)
	r := e.do(http.MethodGet, "/openapi.json", "", nil)
	e.expect(r, http.StatusOK)
	if string(r.body) != string(openAPIDoc) {
		t.Error("served document differs from the embedded one")
	}
}

func TestCanonicalCardURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"HTTPS://Agent.Example.com:443/":               "https://agent.example.com",
		"https://agent.example.com":                    "https://agent.example.com",
		"https://agent.example.com/.well-known/a.json": "https://agent.example.com/.well-known/a.json",
		"https://agent.example.com:8443/card#frag":     "https://agent.example.com:8443/card",
		"http://[::1]:80/":                             "http://[::1]",
		"https://a.example/?v=1":                       "https://a.example/?v=1",
		"not a url":                                    "not a url",
	} {
		if got := canonicalCardURL(in); got != want {
			t.Errorf("canonicalCardURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOpenAPISchemasMatchTypes keeps the documented bodies true: each schema lists exactly the
// JSON members of the type the handlers write.
func TestOpenAPISchemasMatchTypes(t *testing.T) {
	t.Parallel()
	type props struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	var doc struct {
		Components struct {
			Schemas map[string]props `json:"schemas"`
		} `json:"components"`
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]struct {
					Schema props `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
			RequestBody struct {
				Content map[string]struct {
					Schema props `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	for _, c := range []struct {
		name   string
		schema props
		typ    reflect.Type
	}{
		{"Agent", doc.Components.Schemas["Agent"], reflect.TypeFor[agentJSON]()},
		{"Skill", doc.Components.Schemas["Skill"], reflect.TypeFor[skillJSON]()},
		{"Interface", doc.Components.Schemas["Interface"], reflect.TypeFor[interfaceJSON]()},
		{"Problem", doc.Components.Schemas["Problem"], reflect.TypeFor[problemDoc]()},
		{"AgentHealth", doc.Components.Schemas["AgentHealth"], reflect.TypeFor[healthJSON]()},
		{"Breaker", doc.Components.Schemas["Breaker"], reflect.TypeFor[breakerJSON]()},
		{"ReplicaBreaker", doc.Components.Schemas["ReplicaBreaker"], reflect.TypeFor[replicaBreakerJSON]()},
		{"HealthWindow", doc.Components.Schemas["HealthWindow"], reflect.TypeFor[windowJSON]()},
		{"Latency", doc.Components.Schemas["Latency"], reflect.TypeFor[latencyJSON]()},
		{"TestResult", doc.Components.Schemas["TestResult"], reflect.TypeFor[testResult]()},
		{"Tenant", doc.Components.Schemas["Tenant"], reflect.TypeFor[tenantJSON]()},
		{"Token", doc.Components.Schemas["Token"], reflect.TypeFor[tokenJSON]()},
		{"POST /v1/tenants 201", doc.Paths["/v1/tenants"]["post"].Responses["201"].Content["application/json"].Schema, reflect.TypeFor[tenantCreated]()},
		{"POST /v1/tenants/{tenantId}/tokens 201", doc.Paths["/v1/tenants/{tenantId}/tokens"]["post"].Responses["201"].Content["application/json"].Schema, reflect.TypeFor[tokenCreated]()},
		{"POST /v1/agents/validate 200", doc.Paths["/v1/agents/validate"]["post"].Responses["200"].Content["application/json"].Schema, reflect.TypeFor[validateResponse]()},
		{"POST /v1/agents/{id}/test body", doc.Paths["/v1/agents/{id}/test"]["post"].RequestBody.Content["application/json"].Schema, reflect.TypeFor[testTurnRequest]()},
	} {
		var documented, written []string
		for k := range c.schema.Properties {
			documented = append(documented, k)
		}
		for i := range c.typ.NumField() {
			name, _, _ := strings.Cut(c.typ.Field(i).Tag.Get("json"), ",")
			written = append(written, name)
		}
		slices.Sort(documented)
		slices.Sort(written)
		if diff := cmp.Diff(written, documented); diff != "" {
			t.Errorf("%s members (-written +documented):\n%s", c.name, diff)
		}
	}
}
