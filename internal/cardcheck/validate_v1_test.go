package cardcheck

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck/cardchecktest"
)

// baseV1Card is a valid A2A 1.0 card, in the shape a2a-go v2 serves it, that the table tests
// change one thing in.
func baseV1Card() map[string]any {
	return map[string]any{
		"name":        "Test agent",
		"description": "Answers test questions.",
		"version":     "1.0.0",
		"supportedInterfaces": []any{
			map[string]any{"url": "https://agent.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
		},
		"capabilities":       map[string]any{"streaming": true},
		"defaultInputModes":  []any{"text/plain"},
		"defaultOutputModes": []any{"text/plain"},
		"skills": []any{
			map[string]any{"id": "s1", "name": "Skill one", "description": "Does one thing.", "tags": []any{"demo"}},
		},
	}
}

func v1Card(mutate func(c map[string]any)) []byte {
	c := baseV1Card()
	if mutate != nil {
		mutate(c)
	}
	return cardchecktest.MustJSON(c)
}

// iface is a supportedInterfaces entry.
func iface(url, binding, version string) map[string]any {
	return map[string]any{"url": url, "protocolBinding": binding, "protocolVersion": version}
}

// apiKeyV1 is an A2A 1.0 apiKey scheme.
func apiKeyV1(location, header string) map[string]any {
	return map[string]any{"apiKeySecurityScheme": map[string]any{"location": location, "name": header}}
}

// requireV1 is securityRequirements naming one scheme with the given scopes value.
func requireV1(name string, scopes any) []any {
	return []any{map[string]any{"schemes": map[string]any{name: scopes}}}
}

func wantKeyRequired(t *testing.T, r Report, headers ...string) {
	t.Helper()
	if !r.Profile.APIKeyRequired {
		t.Error("APIKeyRequired = false, want true")
	}
	if diff := cmp.Diff(headers, r.Profile.APIKeyHeaders); diff != "" {
		t.Errorf("APIKeyHeaders (-want +got):\n%s", diff)
	}
}

// wantCredential checks the credential the card asks for and that it is needed.
func wantCredential(t *testing.T, r Report, kind string, required bool) {
	t.Helper()
	if !r.Valid {
		t.Errorf("Valid = false; problems: %+v", r.Problems)
	}
	if r.Profile.CredentialKind != kind || r.Profile.CredentialRequired != required {
		t.Errorf("CredentialKind = %q, CredentialRequired = %v; want %q, %v", r.Profile.CredentialKind, r.Profile.CredentialRequired, kind, required)
	}
	if r.Profile.APIKeyRequired != (required && kind == "apiKey") {
		t.Errorf("APIKeyRequired = %v", r.Profile.APIKeyRequired)
	}
}

func wantEndpoint(t *testing.T, r Report, url, version string, fallback *connector.Interface) {
	t.Helper()
	got := [2]string{r.Profile.EndpointURL, r.Profile.ProtocolVersion}
	if got != [2]string{url, version} {
		t.Errorf("EndpointURL, ProtocolVersion = %q, want %q", got, [2]string{url, version})
	}
	if diff := cmp.Diff(fallback, r.Profile.Fallback); diff != "" {
		t.Errorf("Fallback (-want +got):\n%s", diff)
	}
}

func TestValidateV1(t *testing.T) {
	t.Parallel()
	// An OAuth 2.0 flow that needs a user present.
	oauthV1 := map[string]any{"oauth2SecurityScheme": map[string]any{"flows": map[string]any{
		"deviceCode": map[string]any{"deviceAuthorizationUrl": "https://agent.example.com/device", "tokenUrl": "https://agent.example.com/token", "scopes": map[string]any{}},
	}}}
	manyInterfaces := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = iface("https://agent.example.com/a2a", "JSONRPC", "1.0")
		}
		return out
	}

	tests := []struct {
		name         string
		mutate       func(c map[string]any)
		opts         Options
		wantErrors   []pc
		wantWarnings []pc
		check        func(t *testing.T, r Report)
	}{
		{
			name: "valid_card_yields_its_profile",
			check: func(t *testing.T, r Report) {
				want := connector.CardProfile{
					Name: "Test agent", Description: "Answers test questions.", Version: "1.0.0",
					ProtocolVersion: "1.0", EndpointURL: "https://agent.example.com/a2a", Streaming: true, CredentialKind: "none",
					Skills: []connector.Skill{{ID: "s1", Name: "Skill one", Description: "Does one thing.", Tags: []string{"demo"}}},
				}
				if diff := cmp.Diff(want, r.Profile); diff != "" {
					t.Errorf("Profile (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "tenant_of_the_chosen_interface_is_kept",
			mutate: func(c map[string]any) {
				in := iface("https://agent.example.com/a2a", "JSONRPC", "1.0")
				in["tenant"] = " acme "
				c["supportedInterfaces"] = []any{in}
			},
			check: func(t *testing.T, r Report) {
				if r.Profile.EndpointTenant != "acme" {
					t.Errorf("EndpointTenant = %q, want acme", r.Profile.EndpointTenant)
				}
			},
		},
		{
			name: "empty_tenant_means_none",
			mutate: func(c map[string]any) {
				in := iface("https://agent.example.com/a2a", "JSONRPC", "1.0")
				in["tenant"] = ""
				c["supportedInterfaces"] = []any{in}
			},
			check: func(t *testing.T, r Report) {
				if r.Profile.EndpointTenant != "" {
					t.Errorf("EndpointTenant = %q, want none", r.Profile.EndpointTenant)
				}
			},
		},
		{
			name: "first_spoken_interface_is_chosen_over_earlier_grpc",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = []any{
					iface("agent.example.com:50051", "GRPC", "1.0"),
					iface("https://agent.example.com/jsonrpc", "jsonrpc", "1.0"),
					iface("https://agent.example.com/rest", "HTTP+JSON", "1.0"),
					iface("https://agent.example.com/jsonrpc-b", "JSONRPC", "1.0"),
				}
			},
			check: func(t *testing.T, r Report) {
				wantEndpoint(t, r, "https://agent.example.com/jsonrpc", "1.0",
					&connector.Interface{URL: "https://agent.example.com/rest", ProtocolVersion: "1.0", Binding: "HTTP+JSON"})
			},
		},
		{
			// The spec: the first entry the client supports, in the card's order.
			name: "the_first_supported_entry_is_chosen_and_the_next_becomes_the_fallback",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = []any{
					iface("agent.example.com:50051", "GRPC", "1.0"),
					iface("https://agent.example.com/v03", "JSONRPC", "0.3"),
					iface("https://agent.example.com/v1", "JSONRPC", "1.0"),
				}
			},
			check: func(t *testing.T, r Report) {
				wantEndpoint(t, r, "https://agent.example.com/v03", "0.3",
					&connector.Interface{URL: "https://agent.example.com/v1", ProtocolVersion: "1.0"})
			},
		},
		{
			name: "http_json_1_0_is_chosen_with_jsonrpc_as_the_fallback",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = []any{
					iface("https://agent.example.com/rest", "HTTP+JSON", "1.0"),
					iface("https://agent.example.com/rpc", "JSONRPC", "1.0"),
				}
			},
			check: func(t *testing.T, r Report) {
				wantEndpoint(t, r, "https://agent.example.com/rest", "1.0",
					&connector.Interface{URL: "https://agent.example.com/rpc", ProtocolVersion: "1.0"})
				if r.Profile.EndpointBinding != "HTTP+JSON" {
					t.Errorf("EndpointBinding = %q, want HTTP+JSON", r.Profile.EndpointBinding)
				}
			},
		},
		{
			name: "1_x_minor_versions_are_1_0_wire",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = []any{iface("https://agent.example.com/v1", "JSONRPC", "1.1")}
			},
			check: func(t *testing.T, r Report) { wantEndpoint(t, r, "https://agent.example.com/v1", "1.1", nil) },
		},
		{
			name: "0_3_only_is_chosen_without_fallback",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = []any{
					iface("agent.example.com:50051", "GRPC", "1.0"),
					iface("https://agent.example.com/v03", "JSONRPC", "0.3"),
				}
			},
			check: func(t *testing.T, r Report) { wantEndpoint(t, r, "https://agent.example.com/v03", "0.3", nil) },
		},
		{
			name: "grpc_only_is_unsupported_transport_naming_the_offer",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = []any{iface("agent.example.com:50051", "GRPC", "1.0")}
			},
			wantErrors: []pc{{"supportedInterfaces", "unsupported_transport"}},
			check: func(t *testing.T, r Report) {
				if !strings.Contains(r.Problems[0].Message, "GRPC 1.0 (supportedInterfaces[0])") {
					t.Errorf("message does not name the offer: %q", r.Problems[0].Message)
				}
				wantEndpoint(t, r, "", "", nil)
			},
		},
		{
			name: "grpc_without_scheme_is_skipped_and_0_3_rest_is_called",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = []any{
					iface("agent.example.com:50051", "GRPC", "1.0"),
					iface("https://agent.example.com/rest", "HTTP+JSON", "0.3"),
				}
			},
			check: func(t *testing.T, r Report) {
				if r.Profile.EndpointURL != "https://agent.example.com/rest" || r.Profile.EndpointBinding != "HTTP+JSON" || r.Profile.ProtocolVersion != "0.3" {
					t.Errorf("EndpointURL = %q, binding %q, version %q", r.Profile.EndpointURL, r.Profile.EndpointBinding, r.Profile.ProtocolVersion)
				}
			},
		},
		{
			name: "grpc_without_scheme_alone_is_unsupported_transport",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = []any{iface("agent.example.com:50051", "GRPC", "1.0")}
			},
			wantErrors: []pc{{"supportedInterfaces", "unsupported_transport"}},
			check: func(t *testing.T, r Report) {
				if !strings.Contains(r.Problems[0].Message, "GRPC 1.0 (supportedInterfaces[0])") {
					t.Errorf("message does not name the offer: %q", r.Problems[0].Message)
				}
			},
		},
		{
			name: "jsonrpc_only_in_an_unknown_version_is_unsupported_protocol_version",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = []any{iface("https://agent.example.com/v2", "JSONRPC", "2.0")}
			},
			wantErrors: []pc{{"supportedInterfaces", "unsupported_protocol_version"}},
		},
		{
			name: "jsonrpc_in_an_unknown_version_beside_1_0_is_a_warning",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = []any{
					iface("https://agent.example.com/v2", "JSONRPC", "2.0"),
					iface("https://agent.example.com/v1", "JSONRPC", "1.0"),
				}
			},
			wantWarnings: []pc{{"supportedInterfaces[0].protocolVersion", "unsupported_protocol_version"}},
			check:        func(t *testing.T, r Report) { wantEndpoint(t, r, "https://agent.example.com/v1", "1.0", nil) },
		},
		{
			name: "http_url_is_insecure_at_the_chosen_interface",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = []any{
					iface("http://agent.example.com:50051", "GRPC", "1.0"),
					iface("http://agent.example.com/a2a", "JSONRPC", "1.0"),
				}
			},
			// gRPC is chosen (first in the card's order): its http URL is the error; the
			// fallback's is a warning.
			wantErrors:   []pc{{"supportedInterfaces[0].url", "insecure_url"}},
			wantWarnings: []pc{{"supportedInterfaces[1].url", "insecure_url"}},
		},
		{
			name: "http_url_is_allowed_when_configured",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = []any{iface("http://agent.example.com/a2a", "JSONRPC", "1.0")}
			},
			opts:  Options{AllowInsecureHTTP: true},
			check: func(t *testing.T, r Report) { wantEndpoint(t, r, "http://agent.example.com/a2a", "1.0", nil) },
		},
		{
			name: "host_and_port_url_is_invalid_at_the_chosen_interface",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = []any{iface("localhost:41241", "JSONRPC", "1.0")}
			},
			wantErrors: []pc{{"supportedInterfaces[0].url", "invalid_url"}},
		},
		{
			name: "insecure_fallback_is_a_warning_and_dropped",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = []any{
					iface("https://agent.example.com/v1", "JSONRPC", "1.0"),
					iface("http://agent.example.com/v03", "JSONRPC", "0.3"),
				}
			},
			wantWarnings: []pc{{"supportedInterfaces[1].url", "insecure_url"}},
			check:        func(t *testing.T, r Report) { wantEndpoint(t, r, "https://agent.example.com/v1", "1.0", nil) },
		},
		{
			name:       "empty_supported_interfaces_is_min_items",
			mutate:     func(c map[string]any) { c["supportedInterfaces"] = []any{} },
			wantErrors: []pc{{"supportedInterfaces", "min_items"}},
		},
		{
			name: "supported_interfaces_as_object_is_invalid_type_only",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = map[string]any{"url": "https://agent.example.com/a2a"}
			},
			wantErrors: []pc{{"supportedInterfaces", "invalid_type"}},
		},
		{
			name: "interface_without_binding_or_version_is_required_only",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = []any{
					map[string]any{"url": "https://agent.example.com/a2a", "protocolVersion": "1.0"},
					map[string]any{"url": "https://agent.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": ""},
				}
			},
			wantErrors: []pc{{"supportedInterfaces[0].protocolBinding", "required"}, {"supportedInterfaces[1].protocolVersion", "required"}},
		},
		{
			name: "blank_interface_url_is_required",
			mutate: func(c map[string]any) {
				c["supportedInterfaces"] = []any{iface("  ", "JSONRPC", "1.0")}
			},
			wantErrors: []pc{{"supportedInterfaces[0].url", "required"}},
		},
		{
			name:       "more_than_50_interfaces_is_too_long",
			mutate:     func(c map[string]any) { c["supportedInterfaces"] = manyInterfaces(51) },
			wantErrors: []pc{{"supportedInterfaces", "too_long"}},
		},
		{
			name: "missing_fields_are_required_and_url_is_not",
			mutate: func(c map[string]any) {
				delete(c, "name")
				c["description"] = ""
				delete(c, "version")
				delete(c, "capabilities")
			},
			wantErrors: []pc{{"name", "required"}, {"description", "required"}, {"version", "required"}, {"capabilities", "required"}},
		},
		{
			name:       "missing_skills_is_required",
			mutate:     func(c map[string]any) { delete(c, "skills") },
			wantErrors: []pc{{"skills", "required"}},
		},
		{
			name:       "no_skills_is_min_items",
			mutate:     func(c map[string]any) { c["skills"] = []any{} },
			wantErrors: []pc{{"skills", "min_items"}},
		},
		{
			name: "skill_without_id_name_description_is_required",
			mutate: func(c map[string]any) {
				c["skills"] = []any{map[string]any{"id": "", "name": "", "description": "", "tags": []any{"t"}}}
			},
			wantErrors: []pc{{"skills[0].id", "required"}, {"skills[0].name", "required"}, {"skills[0].description", "required"}},
		},
		{
			name: "sdk_defaults_empty_skill_modes_and_lists_are_unset",
			mutate: func(c map[string]any) {
				s := skill(c, 0)
				s["inputModes"] = []any{}
				s["outputModes"] = []any{}
				s["securityRequirements"] = []any{}
				s["examples"] = []any{}
				c["securitySchemes"] = map[string]any{}
				c["securityRequirements"] = []any{}
				c["signatures"] = []any{}
				c["documentationUrl"] = ""
				c["capabilities"] = map[string]any{"streaming": true, "pushNotifications": false, "extensions": []any{}, "extendedAgentCard": false}
			},
			check: func(t *testing.T, r Report) {
				if r.Profile.APIKeyRequired || r.Profile.APIKeyHeaders != nil {
					t.Errorf("APIKeyRequired = %v, APIKeyHeaders = %v, want no key", r.Profile.APIKeyRequired, r.Profile.APIKeyHeaders)
				}
			},
		},
		{
			name:       "skill_modes_without_text_plain_is_an_error",
			mutate:     func(c map[string]any) { skill(c, 0)["inputModes"] = []any{"image/png"} },
			wantErrors: []pc{{"skills[0].inputModes", "unsupported_mode"}},
		},
		{
			name: "bare_text_mode_of_the_sdk_samples_is_text_plain",
			mutate: func(c map[string]any) {
				c["defaultInputModes"] = []any{"text"}
				c["defaultOutputModes"] = []any{"text", "task-status"}
				skill(c, 0)["inputModes"] = []any{"text"}
			},
			wantWarnings: []pc{{"defaultOutputModes", "unsupported_mode"}},
		},
		{
			name:       "empty_default_modes_is_an_error",
			mutate:     func(c map[string]any) { c["defaultInputModes"] = []any{} },
			wantErrors: []pc{{"defaultInputModes", "unsupported_mode"}},
		},
		{
			name: "api_key_with_list_scopes_needs_the_key",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"apiKey": apiKeyV1("header", "X-API-KEY")}
				c["securityRequirements"] = requireV1("apiKey", map[string]any{"list": []any{}})
			},
			check: func(t *testing.T, r Report) { wantKeyRequired(t, r, "X-API-KEY") },
		},
		{
			name: "api_key_with_plain_list_null_or_empty_object_scopes_needs_the_key",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"a": apiKeyV1("header", "X-API-KEY"), "b": apiKeyV1("header", "X-API-KEY"), "c": apiKeyV1("header", "X-API-KEY")}
				c["securityRequirements"] = []any{
					map[string]any{"schemes": map[string]any{"a": []any{}}},
					map[string]any{"schemes": map[string]any{"b": nil}},
					map[string]any{"schemes": map[string]any{"c": map[string]any{}}},
				}
			},
			check: func(t *testing.T, r Report) { wantKeyRequired(t, r, "X-API-KEY") },
		},
		{
			name: "ts_proto_oneof_scheme_of_the_js_sdk_is_read",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"apiKey": map[string]any{"scheme": map[string]any{
					"$case": "apiKeySecurityScheme", "value": map[string]any{"description": "", "location": "header", "name": "X-API-KEY"},
				}}}
				c["securityRequirements"] = requireV1("apiKey", map[string]any{"list": []any{}})
			},
			check: func(t *testing.T, r Report) { wantKeyRequired(t, r, "X-API-KEY") },
		},
		{
			name: "ts_proto_oneof_scheme_without_location_is_required_at_its_path",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"apiKey": map[string]any{"scheme": map[string]any{
					"$case": "apiKeySecurityScheme", "value": map[string]any{"location": "", "name": "X-API-KEY"},
				}}}
				c["securityRequirements"] = requireV1("apiKey", map[string]any{"list": []any{}})
			},
			wantErrors: []pc{{"securitySchemes.apiKey.scheme.value.location", "required"}},
		},
		{
			name: "no_requirement_with_a_defined_key_scheme_needs_nothing",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"apiKey": apiKeyV1("header", "X-API-KEY")}
			},
			check: func(t *testing.T, r Report) {
				if r.Profile.APIKeyRequired {
					t.Error("APIKeyRequired = true without any requirement")
				}
			},
		},
		{
			name: "oauth2_only_is_unsupported_security",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"oauth": oauthV1}
				c["securityRequirements"] = requireV1("oauth", map[string]any{"list": []any{"read"}})
			},
			wantErrors: []pc{{"securityRequirements", "unsupported_security"}},
			check: func(t *testing.T, r Report) {
				if !strings.Contains(r.Problems[0].Message, "apiKeySecurityScheme") {
					t.Errorf("message does not show the 1.0 form: %q", r.Problems[0].Message)
				}
			},
		},
		{
			name: "oauth2_or_api_key_is_acceptable",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"oauth": oauthV1, "key": apiKeyV1("header", "X-API-KEY")}
				c["securityRequirements"] = []any{
					map[string]any{"schemes": map[string]any{"oauth": map[string]any{"list": []any{"read"}}}},
					map[string]any{"schemes": map[string]any{"key": map[string]any{"list": []any{}}}},
				}
			},
			check: func(t *testing.T, r Report) { wantKeyRequired(t, r, "X-API-KEY") },
		},
		{
			name: "api_key_in_query_is_unsupported_security",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"key": apiKeyV1("query", "key")}
				c["securityRequirements"] = requireV1("key", map[string]any{"list": []any{}})
			},
			wantErrors: []pc{{"securityRequirements", "unsupported_security"}},
			check: func(t *testing.T, r Report) {
				if !strings.Contains(r.Problems[0].Message, "apiKey in query") {
					t.Errorf("message does not name the scheme: %q", r.Problems[0].Message)
				}
			},
		},
		{
			name: "http_bearer_takes_a_bearer_token",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"Bearer": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "bearer", "bearerFormat": "JWT"}}}
				c["securityRequirements"] = requireV1("Bearer", map[string]any{"list": []any{}})
			},
			check: func(t *testing.T, r Report) { wantCredential(t, r, "bearerToken", true) },
		},
		{
			name: "oauth2_client_credentials_takes_oauth2",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"oauth": map[string]any{"oauth2SecurityScheme": map[string]any{"flows": map[string]any{
					"clientCredentials": map[string]any{"tokenUrl": "https://agent.example.com/token", "scopes": map[string]any{}},
				}}}}
				c["securityRequirements"] = requireV1("oauth", map[string]any{"list": []any{"read"}})
			},
			check: func(t *testing.T, r Report) {
				wantCredential(t, r, "oauth2", true)
				if r.Profile.OAuth2TokenURL != "https://agent.example.com/token" || !cmp.Equal(r.Profile.OAuth2Scopes, []string{"read"}) {
					t.Errorf("OAuth2TokenURL = %q, OAuth2Scopes = %v", r.Profile.OAuth2TokenURL, r.Profile.OAuth2Scopes)
				}
			},
		},
		{
			name: "oauth2_client_credentials_as_the_js_sdk_writes_it",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"oauth": map[string]any{"scheme": map[string]any{"$case": "oauth2SecurityScheme", "value": map[string]any{
					"flows": map[string]any{"flow": map[string]any{"$case": "clientCredentials", "value": map[string]any{"tokenUrl": "https://agent.example.com/token", "scopes": map[string]any{}}}},
				}}}}
				c["securityRequirements"] = requireV1("oauth", map[string]any{"list": []any{}})
			},
			check: func(t *testing.T, r Report) { wantCredential(t, r, "oauth2", true) },
		},
		{
			name: "mtls_takes_a_client_certificate",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"m": map[string]any{"mtlsSecurityScheme": map[string]any{}}}
				c["securityRequirements"] = requireV1("m", nil)
			},
			check: func(t *testing.T, r Report) { wantCredential(t, r, "mtls", true) },
		},
		{
			name: "mtls_or_an_api_key_takes_either",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"m": map[string]any{"mtlsSecurityScheme": nil}, "key": apiKeyV1("header", "X-API-KEY")}
				c["securityRequirements"] = []any{map[string]any{"schemes": map[string]any{"m": map[string]any{"list": []any{}}}}, map[string]any{"schemes": map[string]any{"key": map[string]any{"list": []any{}}}}}
			},
			check: func(t *testing.T, r Report) {
				if !slices.Contains(r.Profile.CredentialKinds, "mtls") || !slices.Contains(r.Profile.CredentialKinds, "apiKey") {
					t.Errorf("credential kinds %v, want mtls and apiKey", r.Profile.CredentialKinds)
				}
			},
		},
		{
			name: "api_key_without_location_is_required_at_its_path",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"key": map[string]any{"apiKeySecurityScheme": map[string]any{"name": "X-API-KEY"}}}
				c["securityRequirements"] = requireV1("key", map[string]any{"list": []any{}})
			},
			wantErrors: []pc{{"securitySchemes.key.apiKeySecurityScheme.location", "required"}},
			check: func(t *testing.T, r Report) {
				if !strings.Contains(r.Problems[0].Message, `"header"`) {
					t.Errorf("message does not say what to set: %q", r.Problems[0].Message)
				}
			},
		},
		{
			name: "custom_header_is_a_warning_and_both_headers_are_used",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"key": apiKeyV1("header", "X-Custom-Key")}
				c["securityRequirements"] = requireV1("key", map[string]any{"list": []any{}})
			},
			wantWarnings: []pc{{"securitySchemes.key.apiKeySecurityScheme.name", "api_key_header"}},
			check:        func(t *testing.T, r Report) { wantKeyRequired(t, r, "X-API-KEY", "X-Custom-Key") },
		},
		{
			name:       "undefined_scheme_is_an_error_at_its_path",
			mutate:     func(c map[string]any) { c["securityRequirements"] = requireV1("nope", map[string]any{"list": []any{}}) },
			wantErrors: []pc{{"securityRequirements[0].schemes.nope", "undefined_scheme"}},
		},
		{
			name: "scheme_name_with_a_space_uses_the_bracket_path",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"my key": map[string]any{"apiKeySecurityScheme": map[string]any{"location": "header"}}}
				c["securityRequirements"] = requireV1("my key", map[string]any{"list": []any{}})
			},
			wantErrors: []pc{{`securitySchemes["my key"].apiKeySecurityScheme.name`, "required"}},
		},
		{
			name:       "scopes_of_the_wrong_type_are_invalid_type",
			mutate:     func(c map[string]any) { c["securityRequirements"] = requireV1("apiKey", "all") },
			wantErrors: []pc{{"securityRequirements[0].schemes.apiKey", "invalid_type"}, {"securityRequirements[0].schemes.apiKey", "undefined_scheme"}},
		},
		{
			name: "two_kinds_in_one_scheme_is_invalid",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"key": map[string]any{
					"apiKeySecurityScheme":   map[string]any{"location": "header", "name": "X-API-KEY"},
					"httpAuthSecurityScheme": map[string]any{"scheme": "bearer"},
				}}
				c["securityRequirements"] = requireV1("key", map[string]any{"list": []any{}})
			},
			wantErrors: []pc{{"securitySchemes.key", "invalid"}},
		},
		{
			name: "scheme_of_no_known_kind_is_required",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"key": map[string]any{"location": "header", "name": "X-API-KEY"}}
				c["securityRequirements"] = requireV1("key", map[string]any{"list": []any{}})
			},
			wantErrors: []pc{{"securitySchemes.key", "required"}},
		},
		{
			name: "1_0_card_with_0_x_security_is_read",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"apiKey": map[string]any{"type": "apiKey", "in": "header", "name": "X-API-KEY"}}
				c["security"] = []any{map[string]any{"apiKey": []any{}}}
			},
			check: func(t *testing.T, r Report) { wantKeyRequired(t, r, "X-API-KEY") },
		},
		{
			name: "empty_security_requirements_give_way_to_0_x_security",
			mutate: func(c map[string]any) {
				c["securityRequirements"] = []any{}
				c["security"] = []any{"apiKey"}
			},
			check: func(t *testing.T, r Report) { wantKeyRequired(t, r, "X-API-KEY") },
		},
		{
			name: "0_x_oauth_security_on_a_1_0_card_is_reported_at_security",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"oauth": oauthV1}
				c["security"] = []any{map[string]any{"oauth": []any{}}}
			},
			wantErrors: []pc{{"security", "unsupported_security"}},
		},
		{
			name: "skill_level_oauth_is_a_warning",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"oauth": oauthV1}
				skill(c, 0)["securityRequirements"] = requireV1("oauth", map[string]any{"list": []any{}})
			},
			wantWarnings: []pc{{"skills[0].securityRequirements", "unsupported_security"}},
		},
		{
			name: "skill_level_api_key_makes_the_key_required",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"key": apiKeyV1("header", "X-API-KEY")}
				skill(c, 0)["securityRequirements"] = requireV1("key", nil)
			},
			check: func(t *testing.T, r Report) { wantKeyRequired(t, r, "X-API-KEY") },
		},
		{
			name:       "legacy_authentication_alone_explains_the_1_0_form",
			mutate:     func(c map[string]any) { c["authentication"] = map[string]any{"schemes": []any{"Bearer"}} },
			wantErrors: []pc{{"authentication", "legacy_authentication"}},
			check: func(t *testing.T, r Report) {
				if !strings.Contains(r.Problems[0].Message, "securityRequirements") {
					t.Errorf("message does not explain the 1.0 form: %q", r.Problems[0].Message)
				}
			},
		},
		{
			name: "voice_extension_may_be_required",
			mutate: func(c map[string]any) {
				c["capabilities"] = map[string]any{"extensions": []any{map[string]any{"uri": connector.VoiceExtensionURI, "required": true}}}
			},
			check: func(t *testing.T, r Report) {
				if diff := cmp.Diff([]string{connector.VoiceExtensionURI}, r.Profile.Extensions); diff != "" {
					t.Errorf("Extensions (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "unknown_required_extension_is_an_error",
			mutate: func(c map[string]any) {
				c["capabilities"] = map[string]any{"extensions": []any{map[string]any{"uri": "https://example.com/ext", "required": true}}}
			},
			wantErrors: []pc{{"capabilities.extensions[0]", "required_extension_unsupported"}},
		},
		{
			name: "dual_0_3_face_chooses_1_0_and_falls_back_to_0_3",
			mutate: func(c map[string]any) {
				// What a dual-version SDK serves without A2A-Version: a 0.3 card that also
				// lists its interfaces.
				c["url"] = "https://agent.example.com/a2a"
				c["protocolVersion"] = "0.3"
				c["preferredTransport"] = "JSONRPC"
				c["supportedInterfaces"] = []any{
					iface("https://agent.example.com/a2a", "JSONRPC", "1.0"),
					iface("https://agent.example.com/a2a", "JSONRPC", "0.3"),
				}
			},
			check: func(t *testing.T, r Report) {
				wantEndpoint(t, r, "https://agent.example.com/a2a", "1.0",
					&connector.Interface{URL: "https://agent.example.com/a2a", ProtocolVersion: "0.3"})
			},
		},
		{
			name: "0_3_card_with_interfaces_falls_back_to_its_own_url",
			mutate: func(c map[string]any) {
				c["url"] = "https://agent.example.com/v03"
				c["protocolVersion"] = "0.3.0"
				c["supportedInterfaces"] = []any{iface("https://agent.example.com/v1", "JSONRPC", "1.0")}
			},
			check: func(t *testing.T, r Report) {
				wantEndpoint(t, r, "https://agent.example.com/v1", "1.0",
					&connector.Interface{URL: "https://agent.example.com/v03", ProtocolVersion: "0.3.0"})
			},
		},
		{
			name: "0_3_card_with_only_grpc_anywhere_is_unsupported_transport_at_preferred_transport",
			mutate: func(c map[string]any) {
				c["url"] = "agent.example.com:50051"
				c["protocolVersion"] = "0.3.0"
				c["preferredTransport"] = "GRPC"
				c["supportedInterfaces"] = []any{iface("agent.example.com:50051", "GRPC", "1.0")}
			},
			wantErrors: []pc{{"preferredTransport", "unsupported_transport"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := New(tt.opts).Check(v1Card(tt.mutate))
			checkInvariants(t, r)
			cardchecktest.WantProblems(t, r.Problems, tt.wantErrors, tt.wantWarnings)
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

// A gRPC interface written as a bare host:port (a2a-go v2's hello-world gRPC sample, its CLI) or
// grpc://host:port says nothing of TLS: it is called in the scheme the card was served with, and
// the tenant is told so; grpcs:// is TLS; without the card's URL it is not called.
func TestGRPCAddressWithoutScheme(t *testing.T) {
	t.Parallel()
	k := New(Options{AllowInsecureHTTP: true})
	for _, tc := range []struct {
		name, url, cardURL string
		want               string // the endpoint called; "" none
		warn               bool
	}{
		{"bare_over_https", "agent.example.com:9000", "https://agent.example.com/.well-known/agent-card.json", "https://agent.example.com:9000", true},
		{"bare_over_http", "127.0.0.1:9000", "http://127.0.0.1:9001/.well-known/agent-card.json", "http://127.0.0.1:9000", true},
		{"grpc_scheme", "grpc://127.0.0.1:9000", "http://127.0.0.1:9001/", "http://127.0.0.1:9000", true},
		{"grpcs_scheme", "grpcs://agent.example.com:443", "http://agent.example.com/card.json", "https://agent.example.com:443", true},
		{"ipv6", "[::1]:9000", "https://x.example/card", "https://[::1]:9000", true},
		{"https_as_written", "https://agent.example.com/grpc", "http://x/", "https://agent.example.com/grpc", false},
		{"card_url_unknown", "127.0.0.1:9000", "", "", false},
		{"no_port", "agent.example.com", "https://agent.example.com/card", "", false},
		{"not_an_address", "agent.example.com:9000/path", "https://agent.example.com/card", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := k.CheckAt(v1Card(func(c map[string]any) {
				c["supportedInterfaces"] = []any{iface(tc.url, "GRPC", "1.0")}
			}), tc.cardURL)
			checkInvariants(t, r)
			if tc.want == "" {
				if r.Valid || !hasCode(r, "supportedInterfaces", CodeUnsupportedTransport) {
					t.Fatalf("valid %v, problems %v; want unsupported_transport", r.Valid, r.Problems)
				}
				return
			}
			if !r.Valid || r.Profile.EndpointURL != tc.want || r.Profile.EndpointBinding != "GRPC" {
				t.Fatalf("valid %v, endpoint %q %q, problems %v; want %s", r.Valid, r.Profile.EndpointBinding, r.Profile.EndpointURL, r.Problems, tc.want)
			}
			if got := hasCode(r, "supportedInterfaces[0].url", CodeRecommended); got != tc.warn {
				t.Errorf("warning at the url: %v, want %v (%v)", got, tc.warn, r.Problems)
			}
		})
	}
	// Plain http needs the operator's leave, as for any endpoint.
	r := New(Options{}).CheckAt(v1Card(func(c map[string]any) {
		c["supportedInterfaces"] = []any{iface("127.0.0.1:9000", "GRPC", "1.0")}
	}), "http://127.0.0.1:9001/card")
	if r.Valid || !hasCode(r, "supportedInterfaces[0].url", CodeInsecureURL) {
		t.Errorf("plain http without leave: valid %v, problems %v", r.Valid, r.Problems)
	}
}

func hasCode(r Report, path, code string) bool {
	for _, p := range r.Problems {
		if p.Path == path && p.Code == code {
			return true
		}
	}
	return false
}

// TestNoInterfaceNamesEveryBinding: a card with nothing the connector can call is told what it
// can call, every binding (JSON-RPC, HTTP+JSON, gRPC), never that only JSON-RPC works.
func TestNoInterfaceNamesEveryBinding(t *testing.T) {
	t.Parallel()
	v0 := cardchecktest.BaseCard()
	v0["protocolVersion"], v0["url"], v0["preferredTransport"] = "0.3.0", "127.0.0.1:9000", "GRPC"
	for _, tc := range []struct {
		name, path, code string
		card             []byte
	}{
		{"1_0_grpc_without_scheme", "supportedInterfaces", CodeUnsupportedTransport, v1Card(func(c map[string]any) {
			c["supportedInterfaces"] = []any{iface("agent.example.com:50051", "GRPC", "1.0")}
		})},
		{"1_0_jsonrpc_in_an_unknown_version", "supportedInterfaces", CodeUnsupportedProtocolVersion, v1Card(func(c map[string]any) {
			c["supportedInterfaces"] = []any{iface("https://agent.example.com/v2", "JSONRPC", "2.0")}
		})},
		{"0_3_grpc_without_scheme", "preferredTransport", CodeUnsupportedTransport, cardchecktest.MustJSON(v0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := New(Options{}).Check(tc.card)
			var msg string
			for _, p := range r.Problems {
				if p.Path == tc.path && p.Code == tc.code {
					msg = p.Message
				}
			}
			if msg == "" {
				t.Fatalf("no %s at %s: %v", tc.code, tc.path, r.Problems)
			}
			for _, want := range []string{"JSON-RPC, HTTP+JSON or gRPC", "http(s)://"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q: %s", want, msg)
				}
			}
			for _, wrong := range []string{"no JSONRPC", "Serve JSON-RPC", "calls agents with JSON-RPC", "JSON-RPC over HTTPS"} {
				if strings.Contains(msg, wrong) {
					t.Errorf("message says only JSON-RPC works (%q): %s", wrong, msg)
				}
			}
		})
	}
}
