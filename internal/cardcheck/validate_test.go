package cardcheck

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck/cardchecktest"
)

func TestValidate(t *testing.T) {
	t.Parallel()

	apiKeyScheme := func(header string) map[string]any {
		return map[string]any{"type": "apiKey", "in": "header", "name": header}
	}
	// An OAuth 2.0 flow that needs a user present: unsupported, whatever else the card says.
	oauthScheme := map[string]any{"type": "oauth2", "flows": map[string]any{
		"authorizationCode": map[string]any{"authorizationUrl": "https://agent.example.com/authorize", "tokenUrl": "https://agent.example.com/token", "scopes": map[string]any{}},
	}}
	clientCredentials := map[string]any{"type": "oauth2", "flows": map[string]any{
		"clientCredentials": map[string]any{"tokenUrl": "https://agent.example.com/token", "scopes": map[string]any{"read": "r"}},
	}}
	manySkills := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"id": fmt.Sprintf("s%d", i), "name": "n", "description": "d", "tags": []any{"t"}}
		}
		return out
	}
	manyStrings := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = fmt.Sprintf("item %d", i)
		}
		return out
	}
	intentParams := func(uri string, entries ...any) map[string]any {
		return map[string]any{"uri": uri, "params": map[string]any{"skills": entries}}
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{"num1": map[string]any{"type": "integer"}}}

	tests := []struct {
		name   string
		raw    []byte                 // the card; when nil, baseCard changed by mutate
		mutate func(c map[string]any) // change to baseCard
		opts   Options
		// wantErrors and wantWarnings are the exact sets of (path, code).
		wantErrors   []pc
		wantWarnings []pc
		check        func(t *testing.T, r Report)
	}{
		{
			name: "valid_base_card_yields_its_profile",
			check: func(t *testing.T, r Report) {
				want := connector.CardProfile{
					Name: "Test agent", Description: "Answers test questions.", Version: "1.0.0",
					ProtocolVersion: "0.2.5", EndpointURL: "https://agent.example.com/a2a", Streaming: true, CredentialKind: "none",
					Skills: []connector.Skill{{ID: "s1", Name: "Skill one", Description: "Does one thing.", Tags: []string{"demo"}}},
				}
				if diff := cmp.Diff(want, r.Profile); diff != "" {
					t.Errorf("Profile (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "empty_object_lists_every_required_field",
			raw:  []byte(`{}`),
			wantErrors: []pc{
				{"name", "required"}, {"description", "required"}, {"url", "required"}, {"version", "required"},
				{"protocolVersion", "required"}, {"capabilities", "required"}, {"defaultInputModes", "required"},
				{"defaultOutputModes", "required"}, {"skills", "required"},
			},
		},
		{
			name:       "junk_is_invalid_json",
			raw:        []byte(`{"name": "x",`),
			wantErrors: []pc{{"", "invalid_json"}},
			check: func(t *testing.T, r Report) {
				if r.Card != nil {
					t.Errorf("Card = %s, want nil for junk", r.Card)
				}
			},
		},
		{
			name:       "two_values_are_invalid_json",
			raw:        []byte(`{} {}`),
			wantErrors: []pc{{"", "invalid_json"}},
		},
		{
			name:       "invalid_utf8_is_invalid_json",
			raw:        []byte("{\"name\": \"\xff\"}"),
			wantErrors: []pc{{"", "invalid_json"}},
		},
		{
			name:       "array_instead_of_object_is_invalid_type",
			raw:        []byte(`[{"name": "x"}]`),
			wantErrors: []pc{{"", "invalid_type"}},
		},
		{
			name: "byte_order_mark_is_skipped",
			raw:  append([]byte("\xef\xbb\xbf"), cardchecktest.Card(nil)...),
		},
		{
			name: "unknown_fields_are_kept_in_card",
			mutate: func(c map[string]any) {
				c["x-vendor"] = map[string]any{"keep": []any{1, 2.5}}
				c["provider"] = map[string]any{"organization": "Example"}
			},
			check: func(t *testing.T, r Report) {
				var got map[string]any
				if err := json.Unmarshal(r.Card, &got); err != nil {
					t.Fatal(err)
				}
				if got["x-vendor"] == nil || got["provider"] == nil {
					t.Errorf("unknown fields dropped: %s", r.Card)
				}
			},
		},
		{
			name: "wrong_json_types_are_reported_with_paths_and_not_also_as_missing",
			mutate: func(c map[string]any) {
				c["name"] = 42
				c["capabilities"] = map[string]any{"streaming": "yes"}
				c["defaultInputModes"] = "text/plain"
				skill(c, 0)["tags"] = "demo"
				skill(c, 0)["id"] = []any{"s1"}
			},
			wantErrors: []pc{
				{"name", "invalid_type"}, {"capabilities.streaming", "invalid_type"},
				{"defaultInputModes", "invalid_type"}, {"skills[0].tags", "invalid_type"}, {"skills[0].id", "invalid_type"},
			},
		},
		{
			name:       "skills_as_object_is_invalid_type",
			mutate:     func(c map[string]any) { c["skills"] = map[string]any{"id": "s1"} },
			wantErrors: []pc{{"skills", "invalid_type"}},
		},
		{
			name:       "skill_that_is_not_an_object_is_invalid_type_only",
			mutate:     func(c map[string]any) { c["skills"] = []any{"s1"} },
			wantErrors: []pc{{"skills[0]", "invalid_type"}},
		},
		{
			name:       "null_counts_as_missing",
			mutate:     func(c map[string]any) { c["name"] = nil },
			wantErrors: []pc{{"name", "required"}},
		},
		{
			name:       "empty_string_counts_as_missing",
			mutate:     func(c map[string]any) { skill(c, 0)["description"] = "" },
			wantErrors: []pc{{"skills[0].description", "required"}},
		},
		{
			name:       "no_skills_is_min_items",
			mutate:     func(c map[string]any) { c["skills"] = []any{} },
			wantErrors: []pc{{"skills", "min_items"}},
		},
		{
			name:         "other_default_modes_are_a_warning",
			mutate:       func(c map[string]any) { c["defaultInputModes"] = []any{"text/plain", "image/png"} },
			wantWarnings: []pc{{"defaultInputModes", "unsupported_mode"}},
		},
		{
			name:       "empty_default_output_modes_is_an_error",
			mutate:     func(c map[string]any) { c["defaultOutputModes"] = []any{} },
			wantErrors: []pc{{"defaultOutputModes", "unsupported_mode"}},
		},
		{
			name:   "text_plain_with_parameters_counts",
			mutate: func(c map[string]any) { c["defaultOutputModes"] = []any{"Text/Plain; charset=utf-8"} },
		},
		{
			name:       "skill_input_modes_without_text_plain_is_an_error",
			mutate:     func(c map[string]any) { skill(c, 0)["inputModes"] = []any{"image/png"} },
			wantErrors: []pc{{"skills[0].inputModes", "unsupported_mode"}},
		},
		{
			name:       "skill_empty_output_modes_is_an_error",
			mutate:     func(c map[string]any) { skill(c, 0)["outputModes"] = []any{} },
			wantErrors: []pc{{"skills[0].outputModes", "unsupported_mode"}},
		},
		{
			name:         "skill_extra_output_mode_is_a_warning",
			mutate:       func(c map[string]any) { skill(c, 0)["outputModes"] = []any{"text/plain", "application/json"} },
			wantWarnings: []pc{{"skills[0].outputModes", "unsupported_mode"}},
		},
		{
			name:         "missing_tags_is_a_warning",
			mutate:       func(c map[string]any) { delete(skill(c, 0), "tags") },
			wantWarnings: []pc{{"skills[0].tags", "recommended"}},
		},
		{
			name: "duplicate_skill_id_is_reported_on_the_later_one",
			mutate: func(c map[string]any) {
				c["skills"] = append(c["skills"].([]any),
					map[string]any{"id": "s2", "name": "Two", "description": "d", "tags": []any{"t"}},
					map[string]any{"id": "s1", "name": "Again", "description": "d", "tags": []any{"t"}})
			},
			wantErrors: []pc{{"skills[2].id", "duplicate"}},
		},
		{
			name:   "short_form_api_key_requires_a_key",
			mutate: func(c map[string]any) { c["security"] = []any{"apiKey"} },
			check: func(t *testing.T, r Report) {
				if !r.Profile.APIKeyRequired || !cmp.Equal(r.Profile.APIKeyHeaders, []string{"X-API-KEY"}) {
					t.Errorf("APIKeyRequired = %v, APIKeyHeaders = %v", r.Profile.APIKeyRequired, r.Profile.APIKeyHeaders)
				}
			},
		},
		{
			name:       "short_form_other_type_is_unsupported",
			mutate:     func(c map[string]any) { c["security"] = []any{"oauth2"} },
			wantErrors: []pc{{"security", "unsupported_security"}},
		},
		{
			name: "oauth_or_api_key_is_acceptable_and_needs_the_key",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"oauth": oauthScheme, "key": apiKeyScheme("X-API-KEY")}
				c["security"] = []any{map[string]any{"oauth": []any{"read"}}, map[string]any{"key": []any{}}}
			},
			check: func(t *testing.T, r Report) {
				if !r.Profile.APIKeyRequired {
					t.Error("APIKeyRequired = false, want true: the only usable alternative needs the key")
				}
			},
		},
		{
			name: "api_key_and_oauth_together_is_unsupported",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"oauth": oauthScheme, "key": apiKeyScheme("X-API-KEY")}
				c["security"] = []any{map[string]any{"oauth": []any{"read"}, "key": []any{}}}
			},
			wantErrors: []pc{{"security", "unsupported_security"}},
		},
		{
			name: "api_key_alternative_beside_an_empty_one_is_optional",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"key": apiKeyScheme("X-API-KEY")}
				c["security"] = []any{map[string]any{}, map[string]any{"key": []any{}}}
			},
			check: func(t *testing.T, r Report) {
				if r.Profile.APIKeyRequired || !cmp.Equal(r.Profile.APIKeyHeaders, []string{"X-API-KEY"}) {
					t.Errorf("APIKeyRequired = %v, APIKeyHeaders = %v", r.Profile.APIKeyRequired, r.Profile.APIKeyHeaders)
				}
			},
		},
		{
			name: "api_key_in_query_is_unsupported",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"k": map[string]any{"type": "apiKey", "in": "query", "name": "key"}}
				c["security"] = []any{map[string]any{"k": []any{}}}
			},
			wantErrors: []pc{{"security", "unsupported_security"}},
		},
		{
			name: "api_key_in_cookie_is_unsupported",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"k": map[string]any{"type": "apiKey", "in": "cookie", "name": "key"}}
				c["security"] = []any{map[string]any{"k": []any{}}}
			},
			wantErrors: []pc{{"security", "unsupported_security"}},
		},
		{
			name: "http_bearer_takes_a_bearer_token",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}}
				c["security"] = []any{map[string]any{"bearer": []any{}}}
			},
			check: func(t *testing.T, r Report) { wantCredential(t, r, "bearerToken", true) },
		},
		{
			name: "mutual_tls_0_3_takes_a_client_certificate",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"mtls": map[string]any{"type": "mutualTLS"}}
				c["security"] = []any{map[string]any{"mtls": []any{}}}
			},
			check: func(t *testing.T, r Report) { wantCredential(t, r, "mtls", true) },
		},
		{
			name: "http_basic_is_unsupported",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"basic": map[string]any{"type": "http", "scheme": "basic"}}
				c["security"] = []any{map[string]any{"basic": []any{}}}
			},
			wantErrors: []pc{{"security", "unsupported_security"}},
			check: func(t *testing.T, r Report) {
				if !strings.Contains(r.Problems[0].Message, "http basic") {
					t.Errorf("message does not name the scheme: %q", r.Problems[0].Message)
				}
			},
		},
		{
			name: "oauth2_client_credentials_takes_oauth2_with_the_card_token_url_and_scopes",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"oauth": clientCredentials}
				c["security"] = []any{map[string]any{"oauth": []any{"read"}}}
			},
			check: func(t *testing.T, r Report) {
				wantCredential(t, r, "oauth2", true)
				if r.Profile.OAuth2TokenURL != "https://agent.example.com/token" || !cmp.Equal(r.Profile.OAuth2Scopes, []string{"read"}) {
					t.Errorf("OAuth2TokenURL = %q, OAuth2Scopes = %v", r.Profile.OAuth2TokenURL, r.Profile.OAuth2Scopes)
				}
			},
		},
		{
			name: "authorization_code_only_names_the_flows_that_would_work",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"oauth": oauthScheme}
				c["security"] = []any{map[string]any{"oauth": []any{}}}
			},
			wantErrors: []pc{{"security", "unsupported_security"}},
			check: func(t *testing.T, r Report) {
				m := r.Problems[0].Message
				for _, want := range []string{"authorizationCode", "client-credentials", "bearer token", "service account"} {
					if !strings.Contains(m, want) {
						t.Errorf("message lacks %q: %q", want, m)
					}
				}
			},
		},
		{
			name: "oauth2_on_google_token_url_takes_a_google_service_account",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"google": map[string]any{"type": "oauth2", "flows": map[string]any{
					"authorizationCode": map[string]any{"authorizationUrl": "https://accounts.google.com/o/oauth2/auth", "tokenUrl": "https://oauth2.googleapis.com/token", "scopes": map[string]any{}},
				}}}
				c["security"] = []any{map[string]any{"google": []any{"https://www.googleapis.com/auth/cloud-platform"}}}
			},
			check: func(t *testing.T, r Report) { wantCredential(t, r, "googleServiceAccount", true) },
		},
		{
			name: "openid_connect_on_google_takes_a_google_service_account",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"g": map[string]any{"type": "openIdConnect", "openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"}}
				c["security"] = []any{map[string]any{"g": []any{}}}
			},
			check: func(t *testing.T, r Report) { wantCredential(t, r, "googleServiceAccount", true) },
		},
		{
			name: "openid_connect_elsewhere_is_unsupported",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"o": map[string]any{"type": "openIdConnect", "openIdConnectUrl": "https://idp.example.com/.well-known/openid-configuration"}}
				c["security"] = []any{map[string]any{"o": []any{}}}
			},
			wantErrors: []pc{{"security", "unsupported_security"}},
		},
		{
			name: "bearer_and_api_key_together_is_unsupported",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}, "key": apiKeyScheme("X-API-KEY")}
				c["security"] = []any{map[string]any{"bearer": []any{}, "key": []any{}}}
			},
			wantErrors: []pc{{"security", "unsupported_security"}},
		},
		{
			name: "bearer_or_api_key_prefers_the_key_and_takes_both",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}, "key": apiKeyScheme("X-API-KEY")}
				c["security"] = []any{map[string]any{"bearer": []any{}}, map[string]any{"key": []any{}}}
			},
			check: func(t *testing.T, r Report) {
				wantCredential(t, r, "apiKey", true)
				if !cmp.Equal(r.Profile.CredentialKinds, []string{"apiKey", "bearerToken"}) {
					t.Errorf("CredentialKinds = %v", r.Profile.CredentialKinds)
				}
			},
		},
		{
			name: "custom_header_name_is_a_warning_and_both_headers_are_used",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"key": apiKeyScheme("X-Custom-Key")}
				c["security"] = []any{map[string]any{"key": []any{}}}
			},
			wantWarnings: []pc{{"securitySchemes.key.name", "api_key_header"}},
			check: func(t *testing.T, r Report) {
				if diff := cmp.Diff([]string{"X-API-KEY", "X-Custom-Key"}, r.Profile.APIKeyHeaders); diff != "" {
					t.Errorf("APIKeyHeaders (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "header_name_in_other_case_is_the_platform_header",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"key": apiKeyScheme("x-api-key")}
				c["security"] = []any{map[string]any{"key": []any{}}}
			},
		},
		{
			name:       "undefined_scheme_reference_is_an_error",
			mutate:     func(c map[string]any) { c["security"] = []any{map[string]any{"nope": []any{}}} },
			wantErrors: []pc{{"security[0].nope", "undefined_scheme"}},
		},
		{
			name: "api_key_scheme_without_name_is_one_error",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"key": map[string]any{"type": "apiKey", "in": "header"}}
				c["security"] = []any{map[string]any{"key": []any{}}}
			},
			wantErrors: []pc{{"securitySchemes.key.name", "required"}},
		},
		{
			name:       "security_as_object_is_invalid_type",
			mutate:     func(c map[string]any) { c["security"] = map[string]any{"apiKey": []any{}} },
			wantErrors: []pc{{"security", "invalid_type"}},
		},
		{
			name: "skill_level_oauth_is_a_warning",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"oauth": oauthScheme}
				skill(c, 0)["security"] = []any{map[string]any{"oauth": []any{}}}
			},
			wantWarnings: []pc{{"skills[0].security", "unsupported_security"}},
		},
		{
			name: "skill_level_api_key_makes_the_key_required",
			mutate: func(c map[string]any) {
				c["securitySchemes"] = map[string]any{"key": apiKeyScheme("X-API-KEY")}
				skill(c, 0)["security"] = []any{map[string]any{"key": []any{}}}
			},
			check: func(t *testing.T, r Report) {
				if !r.Profile.APIKeyRequired || !cmp.Equal(r.Profile.APIKeyHeaders, []string{"X-API-KEY"}) {
					t.Errorf("APIKeyRequired = %v, APIKeyHeaders = %v", r.Profile.APIKeyRequired, r.Profile.APIKeyHeaders)
				}
			},
		},
		{
			name: "legacy_authentication_alone_is_an_error",
			mutate: func(c map[string]any) {
				c["authentication"] = map[string]any{"schemes": []any{"Bearer"}}
			},
			wantErrors: []pc{{"authentication", "legacy_authentication"}},
			check: func(t *testing.T, r Report) {
				if !strings.Contains(r.Problems[0].Message, "securitySchemes") {
					t.Errorf("message does not explain the 0.2 form: %q", r.Problems[0].Message)
				}
			},
		},
		{
			name: "legacy_authentication_beside_security_is_a_warning",
			mutate: func(c map[string]any) {
				c["authentication"] = map[string]any{"schemes": []any{"apiKey"}}
				c["security"] = []any{"apiKey"}
			},
			wantWarnings: []pc{{"authentication", "legacy_authentication"}},
		},
		{
			name: "a2a_1_0_card_in_the_0_x_table_is_valid_and_speaks_1_0",
			mutate: func(c map[string]any) {
				delete(c, "url")
				delete(c, "protocolVersion")
				c["supportedInterfaces"] = []any{map[string]any{
					"url": "https://agent.example.com/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0",
				}}
			},
			check: func(t *testing.T, r Report) {
				if r.Profile.EndpointURL != "https://agent.example.com/a2a/v1" || r.Profile.ProtocolVersion != "1.0" {
					t.Errorf("EndpointURL = %q, ProtocolVersion = %q", r.Profile.EndpointURL, r.Profile.ProtocolVersion)
				}
			},
		},
		{
			name:         "unknown_protocol_version_is_a_warning",
			mutate:       func(c map[string]any) { c["protocolVersion"] = "1.0" },
			wantWarnings: []pc{{"protocolVersion", "unsupported_protocol_version"}},
		},
		{
			name:   "protocol_version_0_3_is_accepted",
			mutate: func(c map[string]any) { c["protocolVersion"] = "0.3.0" },
		},
		{
			name:       "http_url_is_insecure",
			mutate:     func(c map[string]any) { c["url"] = "http://agent.example.com/a2a" },
			wantErrors: []pc{{"url", "insecure_url"}},
		},
		{
			name:   "http_url_is_allowed_when_configured",
			mutate: func(c map[string]any) { c["url"] = "http://agent.example.com/a2a" },
			opts:   Options{AllowInsecureHTTP: true},
		},
		{
			name:       "relative_url_is_invalid",
			mutate:     func(c map[string]any) { c["url"] = "/a2a" },
			wantErrors: []pc{{"url", "invalid_url"}},
		},
		{
			name:       "ftp_url_is_invalid",
			mutate:     func(c map[string]any) { c["url"] = "ftp://agent.example.com/a2a" },
			wantErrors: []pc{{"url", "invalid_url"}},
		},
		{
			// 0.3 transport selection: preferredTransport first, and gRPC 0.3 is spoken.
			name: "grpc_preferred_is_called_at_url",
			mutate: func(c map[string]any) {
				c["preferredTransport"] = "GRPC"
				c["additionalInterfaces"] = []any{
					map[string]any{"url": "https://agent.example.com/grpc", "transport": "GRPC"},
					map[string]any{"url": "https://agent.example.com/jsonrpc", "transport": "JSONRPC"},
				}
			},
			check: func(t *testing.T, r Report) {
				if r.Profile.EndpointURL != "https://agent.example.com/a2a" || r.Profile.EndpointBinding != "GRPC" {
					t.Errorf("EndpointURL = %q, binding %q", r.Profile.EndpointURL, r.Profile.EndpointBinding)
				}
			},
		},
		{
			name: "rest_preferred_with_jsonrpc_interface_calls_url_over_rest_first",
			mutate: func(c map[string]any) {
				c["preferredTransport"] = "HTTP+JSON"
				c["additionalInterfaces"] = []any{
					map[string]any{"url": "https://agent.example.com/rest", "transport": "HTTP+JSON"},
					map[string]any{"url": "https://agent.example.com/jsonrpc", "transport": "JSONRPC"},
				}
			},
			check: func(t *testing.T, r Report) {
				// The card's order: preferredTransport names url's binding, which comes first; the
				// next interface in another binding is the fallback.
				if r.Profile.EndpointURL != "https://agent.example.com/a2a" || r.Profile.EndpointBinding != "HTTP+JSON" {
					t.Errorf("EndpointURL = %q, binding %q, version %q", r.Profile.EndpointURL, r.Profile.EndpointBinding, r.Profile.ProtocolVersion)
				}
				want := &connector.Interface{URL: "https://agent.example.com/jsonrpc", ProtocolVersion: "0.2.5", Binding: ""}
				if diff := cmp.Diff(want, r.Profile.Fallback); diff != "" {
					t.Errorf("fallback (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:   "rest_only_is_called_over_0_3_http_json",
			mutate: func(c map[string]any) { c["preferredTransport"] = "HTTP+JSON" },
			check: func(t *testing.T, r Report) {
				if r.Profile.EndpointURL != "https://agent.example.com/a2a" || r.Profile.EndpointBinding != "HTTP+JSON" {
					t.Errorf("EndpointURL = %q, binding %q", r.Profile.EndpointURL, r.Profile.EndpointBinding)
				}
			},
		},
		{
			name: "rest_interface_is_taken_in_the_order_of_additional_interfaces",
			mutate: func(c map[string]any) {
				c["preferredTransport"] = "WEBSOCKET"
				c["additionalInterfaces"] = []any{
					map[string]any{"url": "https://agent.example.com/rest", "transport": "REST"},
					map[string]any{"url": "https://agent.example.com/jsonrpc", "transport": "JSONRPC"},
				}
			},
			check: func(t *testing.T, r Report) {
				if r.Profile.EndpointURL != "https://agent.example.com/rest" || r.Profile.EndpointBinding != "HTTP+JSON" {
					t.Errorf("EndpointURL = %q, binding %q", r.Profile.EndpointURL, r.Profile.EndpointBinding)
				}
			},
		},
		{
			name: "jsonrpc_interface_over_http_is_insecure",
			mutate: func(c map[string]any) {
				c["preferredTransport"] = "WEBSOCKET"
				c["additionalInterfaces"] = []any{map[string]any{"url": "http://agent.example.com/jsonrpc", "transport": "JSONRPC"}}
			},
			wantErrors: []pc{{"additionalInterfaces[0].url", "insecure_url"}},
		},
		{
			name:       "more_than_100_skills_is_too_long",
			mutate:     func(c map[string]any) { c["skills"] = manySkills(101) },
			wantErrors: []pc{{"skills", "too_long"}},
		},
		{
			name:   "exactly_100_skills_is_fine",
			mutate: func(c map[string]any) { c["skills"] = manySkills(100) },
		},
		{
			name:       "more_than_50_tags_is_too_long",
			mutate:     func(c map[string]any) { skill(c, 0)["tags"] = manyStrings(51) },
			wantErrors: []pc{{"skills[0].tags", "too_long"}},
		},
		{
			name:       "more_than_50_examples_is_too_long",
			mutate:     func(c map[string]any) { skill(c, 0)["examples"] = manyStrings(51) },
			wantErrors: []pc{{"skills[0].examples", "too_long"}},
		},
		{
			name:   "string_of_exactly_4_KiB_is_fine",
			mutate: func(c map[string]any) { c["description"] = strings.Repeat("a", 4096) },
		},
		{
			// 1366 runes but 4098 bytes: the limit counts bytes.
			name:       "string_over_4_KiB_in_bytes_is_too_long",
			mutate:     func(c map[string]any) { c["name"] = strings.Repeat("中", 1366) },
			wantErrors: []pc{{"name", "too_long"}},
		},
		{
			name:       "long_tag_is_too_long_at_its_index",
			mutate:     func(c map[string]any) { skill(c, 0)["tags"] = []any{"ok", strings.Repeat("x", 4097)} },
			wantErrors: []pc{{"skills[0].tags[1]", "too_long"}},
		},
		{
			name:       "card_over_1_MiB_is_too_long_and_kept",
			mutate:     func(c map[string]any) { c["padding"] = strings.Repeat("p", 1<<20) },
			wantErrors: []pc{{"", "too_long"}},
			check: func(t *testing.T, r Report) {
				if len(r.Card) <= 1<<20 || r.Profile.Name != "Test agent" {
					t.Errorf("card not kept or profile not filled: %d bytes, name %q", len(r.Card), r.Profile.Name)
				}
			},
		},
		{
			name: "required_platform_extension_is_fine_and_listed",
			mutate: func(c map[string]any) {
				c["capabilities"] = map[string]any{"extensions": []any{
					map[string]any{"uri": ProtocolExtensionZH, "required": true},
					map[string]any{"uri": "https://example.com/ext/optional/v1"},
				}}
			},
			check: func(t *testing.T, r Report) {
				if diff := cmp.Diff([]string{ProtocolExtensionZH}, r.Profile.Extensions); diff != "" {
					t.Errorf("Extensions (-want +got):\n%s", diff)
				}
				if r.Profile.Streaming {
					t.Error("Streaming = true without capabilities.streaming")
				}
			},
		},
		{
			name: "unknown_required_extension_is_an_error_at_its_index",
			mutate: func(c map[string]any) {
				c["capabilities"] = map[string]any{"extensions": []any{
					map[string]any{"uri": ProtocolExtensionEN},
					map[string]any{"uri": "https://example.com/ext/konami/v1", "required": true},
				}}
			},
			wantErrors: []pc{{"capabilities.extensions[1]", "required_extension_unsupported"}},
		},
		{
			name: "configured_extension_may_be_required",
			mutate: func(c map[string]any) {
				c["capabilities"] = map[string]any{"extensions": []any{
					map[string]any{"uri": "https://example.com/ext/konami/v1", "required": true},
				}}
			},
			opts: Options{SupportedExtensions: []string{" https://example.com/ext/konami/v1 "}},
			check: func(t *testing.T, r Report) {
				if diff := cmp.Diff([]string{"https://example.com/ext/konami/v1"}, r.Profile.Extensions); diff != "" {
					t.Errorf("Extensions (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "voice_extension_may_be_required",
			mutate: func(c map[string]any) {
				c["capabilities"] = map[string]any{"extensions": []any{
					map[string]any{"uri": connector.VoiceExtensionURI, "required": true},
				}}
			},
			check: func(t *testing.T, r Report) {
				if diff := cmp.Diff([]string{connector.VoiceExtensionURI}, r.Profile.Extensions); diff != "" {
					t.Errorf("Extensions (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "voice_extension_under_a_configured_uri",
			mutate: func(c map[string]any) {
				c["capabilities"] = map[string]any{"extensions": []any{
					map[string]any{"uri": "https://voice.example.com/v2", "required": true},
				}}
			},
			opts: Options{VoiceExtension: "https://voice.example.com/v2"},
			check: func(t *testing.T, r Report) {
				if diff := cmp.Diff([]string{"https://voice.example.com/v2"}, r.Profile.Extensions); diff != "" {
					t.Errorf("Extensions (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "extension_without_uri_is_required",
			mutate: func(c map[string]any) {
				c["capabilities"] = map[string]any{"extensions": []any{map[string]any{"required": true}}}
			},
			wantErrors: []pc{{"capabilities.extensions[0].uri", "required"}},
		},
		{
			name: "intent_extension_input_schemas_from_params_and_from_skills",
			mutate: func(c map[string]any) {
				c["capabilities"] = map[string]any{"extensions": []any{intentParams(IntentExtensionEN,
					map[string]any{"id": "s1", "inputSchema": schema},
					map[string]any{"id": "ghost", "inputSchema": schema},
				)}}
				c["skills"] = append(c["skills"].([]any), map[string]any{
					"id": "s2", "name": "Two", "description": "d", "tags": []any{"t"},
					"inputSchema": map[string]any{"type": "object"},
				})
			},
			wantWarnings: []pc{{"capabilities.extensions[0].params.skills[1].id", "unknown_skill"}},
			check: func(t *testing.T, r Report) {
				got := map[string]string{}
				for _, s := range r.Profile.Skills {
					got[s.ID] = string(s.InputSchema)
				}
				want := map[string]string{"s1": string(cardchecktest.MustJSON(schema)), "s2": `{"type":"object"}`}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("input schemas (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "intent_input_schema_of_wrong_type_is_invalid_type",
			mutate: func(c map[string]any) {
				c["capabilities"] = map[string]any{"extensions": []any{intentParams(IntentExtensionZH,
					map[string]any{"id": "s1", "inputSchema": "num1: int"},
				)}}
			},
			wantErrors: []pc{{"capabilities.extensions[0].params.skills[0].inputSchema", "invalid_type"}},
		},
		{
			name:   "input_schema_without_intent_extension_is_ignored",
			mutate: func(c map[string]any) { skill(c, 0)["inputSchema"] = schema },
			check: func(t *testing.T, r Report) {
				if r.Profile.Skills[0].InputSchema != nil {
					t.Errorf("InputSchema = %s, want nil without the intent extension", r.Profile.Skills[0].InputSchema)
				}
			},
		},
	}
	if len(tests) < 30 {
		t.Fatalf("only %d cases", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw := tt.raw
			if raw == nil {
				raw = cardchecktest.Card(tt.mutate)
			}
			r := New(tt.opts).Check(raw)
			checkInvariants(t, r)
			cardchecktest.WantProblems(t, r.Problems, tt.wantErrors, tt.wantWarnings)
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

// TestValidateMessagesNameThePath: a tenant reading only the message still finds the field.
func TestValidateMessagesNameThePath(t *testing.T) {
	t.Parallel()
	r := New(Options{}).Check([]byte(`{"skills": [{"id": 3}]}`))
	for _, p := range r.Problems {
		if p.Path != "" && !strings.Contains(p.Message, p.Path) && !strings.Contains(p.Message, lastSegment(p.Path)) {
			t.Errorf("message for %s does not name it: %q", p.Path, p.Message)
		}
	}
}

// TestGRPCAddressWithoutSchemeV0 is TestGRPCAddressWithoutScheme for A2A 0.3 cards: a gRPC url
// (the top-level one with preferredTransport GRPC, or an additionalInterfaces entry) written as
// a bare host:port, as a2a-go v0.3's gRPC sample and @a2a-js/sdk 0.3 write it, is called in the
// scheme the card was served with and warned about; it is never an invalid URL. A bare address
// on a JSON-RPC or HTTP+JSON interface still is.
func TestGRPCAddressWithoutSchemeV0(t *testing.T) {
	t.Parallel()
	const overHTTP, overHTTPS = "http://127.0.0.1:9001/.well-known/agent-card.json", "https://agent.example.com/.well-known/agent-card.json"
	grpcTop := func(url string) func(c map[string]any) {
		return func(c map[string]any) {
			c["protocolVersion"], c["url"], c["preferredTransport"] = "0.3.0", url, "GRPC"
		}
	}
	tests := []struct {
		name, cardURL string
		mutate        func(c map[string]any)
		endpoint      string // the endpoint called; "" none
		binding       string
		fallback      *connector.Interface
		errors        []pc // exact set
		warnings      []pc // exact set
	}{
		{name: "url_over_http", mutate: grpcTop("127.0.0.1:9000"), cardURL: overHTTP,
			endpoint: "http://127.0.0.1:9000", binding: "GRPC", warnings: []pc{{"url", CodeRecommended}}},
		{name: "url_over_https", mutate: grpcTop("agent.example.com:443"), cardURL: overHTTPS,
			endpoint: "https://agent.example.com:443", binding: "GRPC", warnings: []pc{{"url", CodeRecommended}}},
		{name: "ipv6_url", mutate: grpcTop("[::1]:9000"), cardURL: overHTTPS,
			endpoint: "https://[::1]:9000", binding: "GRPC", warnings: []pc{{"url", CodeRecommended}}},
		{name: "grpcs_url_over_http_is_tls", mutate: grpcTop("grpcs://agent.example.com:443"), cardURL: overHTTP,
			endpoint: "https://agent.example.com:443", binding: "GRPC", warnings: []pc{{"url", CodeRecommended}}},
		{
			// The card's URL is not known ("check this JSON"): not called, and said why; the
			// address is no invalid URL.
			name: "url_with_card_url_unknown", mutate: grpcTop("127.0.0.1:9000"),
			errors: []pc{{"preferredTransport", CodeUnsupportedTransport}},
		},
		{
			name: "additional_interface_as_fallback", cardURL: overHTTPS,
			mutate: func(c map[string]any) {
				c["protocolVersion"] = "0.3.0"
				c["additionalInterfaces"] = []any{map[string]any{"url": "agent.example.com:50051", "transport": "GRPC"}}
			},
			endpoint: "https://agent.example.com/a2a", binding: "",
			fallback: &connector.Interface{URL: "https://agent.example.com:50051", ProtocolVersion: "0.3.0", Binding: "GRPC"},
		},
		{
			// preferredTransport GRPC at an https url; the bare entry is listed too.
			name: "additional_interface_chosen_after_unusable_url", cardURL: overHTTP,
			mutate: func(c map[string]any) {
				grpcTop("grpc.example.com:9000/path")(c)
				c["additionalInterfaces"] = []any{map[string]any{"url": "127.0.0.1:9000", "transport": "GRPC"}}
			},
			endpoint: "http://127.0.0.1:9000", binding: "GRPC", warnings: []pc{{"additionalInterfaces[0].url", CodeRecommended}},
		},
		{name: "path_after_an_address_literal_is_invalid", mutate: grpcTop("127.0.0.1:9000/a2a"), cardURL: overHTTP,
			errors: []pc{{"url", CodeInvalidURL}, {"preferredTransport", CodeUnsupportedTransport}}},
		{name: "jsonrpc_url_as_an_address_is_invalid", cardURL: overHTTP,
			mutate: func(c map[string]any) { c["protocolVersion"], c["url"] = "0.3.0", "127.0.0.1:9000" },
			errors: []pc{{"url", CodeInvalidURL}}},
		{
			name: "jsonrpc_additional_interface_as_an_address_is_invalid", cardURL: overHTTPS,
			mutate: func(c map[string]any) {
				c["protocolVersion"] = "0.3.0"
				c["additionalInterfaces"] = []any{map[string]any{"url": "127.0.0.1:9000", "transport": "JSONRPC"}}
			},
			endpoint: "https://agent.example.com/a2a", errors: []pc{{"additionalInterfaces[0].url", CodeInvalidURL}},
		},
	}
	k := New(Options{AllowInsecureHTTP: true})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := cardchecktest.BaseCard()
			tt.mutate(c)
			r := k.CheckAt(cardchecktest.MustJSON(c), tt.cardURL)
			checkInvariants(t, r)
			for _, want := range []struct {
				sev  connector.Severity
				list []pc
			}{{connector.SeverityError, tt.errors}, {connector.SeverityWarning, tt.warnings}} {
				w := append([]pc{}, want.list...)
				cardchecktest.SortPathCodes(w)
				if diff := cmp.Diff(w, cardchecktest.PathCodes(r.Problems, want.sev)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", want.sev, diff)
				}
			}
			if tt.endpoint == "" {
				return
			}
			if r.Profile.EndpointURL != tt.endpoint || r.Profile.EndpointBinding != tt.binding {
				t.Errorf("endpoint %q %q, want %q %q", r.Profile.EndpointBinding, r.Profile.EndpointURL, tt.binding, tt.endpoint)
			}
			if diff := cmp.Diff(tt.fallback, r.Profile.Fallback); diff != "" {
				t.Errorf("fallback (-want +got):\n%s", diff)
			}
		})
	}
}
