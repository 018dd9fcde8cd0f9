package console

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The add form offers every kind of credentials the validated card takes, what it asks for first
// and an AWS key for any card, with the fields of the kind chosen; what is typed is registered
// with the agent (write-only: it never comes back into the page), and an agent registered
// without what its card needs says so.
func TestRegistrationFormOffersEveryCredentialKindInBrowser(t *testing.T) {
	t.Parallel()
	b := newBrowser(t) // first: skips (or fails in CI) before anything else starts
	e := newEnv(t)
	_, token := e.newTenant("credential kinds in browser")
	const clientSecret, awsSecret = "client-secret-in-the-form", "aws-secret-in-the-form/abc+def"
	oauthURL := e.cards.Set("/oauth.json", oauthCard("OAuth"))
	bareOAuthURL := e.cards.Set("/oauth-bare.json", oauthCard("OAuth, nothing set"))
	keyedURL := e.cards.Set("/keyed.json", card("Keyed", "text/plain"))
	mtlsURL := e.cards.Set("/mtls.json", strings.Replace(bearerCard("Mutual TLS"), `{"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}`, `{"bearer": {"mtlsSecurityScheme": {}}}`, 1))

	b.do("open the console", chromedp.Navigate(e.api.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token-input")))
	b.typeInto("#token-input", token)
	b.click("#token-save")
	b.waitText("#agents", "No agents yet")

	options := func() []string {
		return evalJS[[]string](b, `[...document.querySelectorAll("#credential-kind option")].map((o) => o.value)`)
	}
	choose := func(kind string) {
		t.Helper()
		evalJS[bool](b, fmt.Sprintf(`(() => { const s = document.querySelector("#credential-kind"); s.value = %s; s.dispatchEvent(new Event("change")); return true; })()`, jsString(kind)))
	}
	agentJSON := func(cardURL string) map[string]any {
		t.Helper()
		r := e.do(http.MethodGet, "/v1/agents/"+e.agentIDByCardURL(token, cardURL), token, nil)
		e.expect(r, http.StatusOK)
		return r.json(t)
	}

	// An OAuth 2.0 card: its kind first, the other bearer kinds, an AWS key; the client's fields.
	b.typeInto("#card-url", oauthURL)
	b.click("#validate")
	b.waitText("#add-result .validation", "Valid")
	b.waitUntil("the credential choice shows", `() => !document.querySelector("#credential-kind-field").hidden`)
	if got, want := options(), []string{"oauth2", "bearerToken", "googleServiceAccount", "awsSigV4"}; !slices.Equal(got, want) {
		t.Fatalf("kinds offered for an OAuth 2.0 card: %q, want %q", got, want)
	}
	b.waitText("#credential-kind-field", "OAuth 2.0 client (the card asks for it)")
	if !evalJS[bool](b, `document.querySelector("#api-key-field").hidden`) {
		t.Error("the API key field shows for an OAuth 2.0 card")
	}
	b.typeInto("#cred-clientId-add", "the-client")
	b.typeInto("#cred-clientSecret-add", clientSecret)
	b.click("#register")
	b.waitText("#add-result", "Registered “OAuth”")
	if got := b.text("#add-result"); strings.Contains(got, "requires") {
		t.Errorf("registered with its client, the agent still reads as missing credentials: %q", got)
	}
	if a := agentJSON(oauthURL); a["credentialKind"] != "oauth2" || a["credentialsSet"] != true {
		t.Errorf("the agent registered in the form: credentialKind %v, credentialsSet %v", a["credentialKind"], a["credentialsSet"])
	}
	if !evalJS[bool](b, `document.querySelector("#credential-kind-field").hidden && document.querySelectorAll("#credential-inputs input").length === 0`) {
		t.Error("the credential fields stay after registering")
	}

	// A card that asks for an API key, registered with an AWS key instead: the key field goes,
	// the AWS fields come.
	b.typeInto("#card-url", keyedURL)
	b.click("#validate")
	b.waitText("#add-result .validation", "Valid")
	b.waitUntil("the key field shows", `() => !document.querySelector("#api-key-field").hidden`)
	if got, want := options(), []string{"apiKey", "awsSigV4"}; !slices.Equal(got, want) {
		t.Fatalf("kinds offered for an API key card: %q, want %q", got, want)
	}
	choose("awsSigV4")
	b.waitUntil("the AWS fields show", `() => document.querySelector("#api-key-field").hidden && !!document.querySelector("#cred-secretAccessKey-add")`)
	b.typeInto("#cred-accessKeyId-add", "AKIAIOSFODNN7EXAMPLE")
	b.typeInto("#cred-secretAccessKey-add", awsSecret)
	b.typeInto("#cred-region-add", "us-east-1")
	b.click("#register")
	b.waitText("#add-result", "Registered “Keyed”")
	if a := agentJSON(keyedURL); a["credentialKind"] != "awsSigV4" || a["credentialsSet"] != true {
		t.Errorf("the agent registered with an AWS key: credentialKind %v, credentialsSet %v", a["credentialKind"], a["credentialsSet"])
	}
	keyedSel := fmt.Sprintf(`article.agent[data-agent-id=%q]`, e.agentIDByCardURL(token, keyedURL))
	b.waitText(keyedSel+" .badges", "AWS access key (SigV4) set")

	// A card whose scheme is mutual TLS: a client certificate (two PEM fields), or an AWS key.
	b.typeInto("#card-url", mtlsURL)
	b.click("#validate")
	b.waitText("#add-result .validation", "Valid")
	if got, want := options(), []string{"mtls", "awsSigV4"}; !slices.Equal(got, want) {
		t.Fatalf("kinds offered for a mutual TLS card: %q, want %q", got, want)
	}
	if n := evalJS[int](b, `document.querySelectorAll("#credential-inputs textarea#cred-certificatePem-add, #credential-inputs textarea#cred-privateKeyPem-add").length`); n != 2 {
		t.Errorf("the mutual TLS card shows %d PEM fields, want the certificate's and the key's", n)
	}
	// Validate sends the client certificate typed and the CA bundle typed, checked as
	// registering checks them (the card fetch over them is cmd/console-api's test): what is
	// wrong is named, and what was typed stays to be corrected.
	b.typeInto("#cred-certificatePem-add", "not a certificate")
	b.typeInto("#cred-privateKeyPem-add", "not a key")
	b.click("#validate")
	b.waitText("#add-result", "credentials.mtls.certificatePem")
	if v := evalJS[string](b, `document.querySelector("#cred-certificatePem-add").value`); v != "not a certificate" {
		t.Errorf("after a refused preview the certificate field holds %q", v)
	}
	evalJS[bool](b, `(() => { document.querySelector("#ca-pem-field").open = true; for (const s of ["#cred-certificatePem-add", "#cred-privateKeyPem-add"]) document.querySelector(s).value = ""; return true; })()`)
	b.typeInto("#ca-pem", "not a CA bundle")
	b.click("#validate")
	b.waitText("#add-result", "tls.caPem")
	evalJS[bool](b, `(() => { document.querySelector("#ca-pem").value = ""; return true; })()`)

	// Registered with nothing typed: no credentials, and the page says what to set.
	b.typeInto("#card-url", bareOAuthURL)
	b.click("#validate")
	b.waitText("#add-result .validation", "Valid")
	b.click("#register")
	b.waitText("#add-result", "Registered “OAuth, nothing set”", "requires an OAuth 2.0 client")

	if html := evalJS[string](b, `document.documentElement.outerHTML`); strings.Contains(html, clientSecret) || strings.Contains(html, awsSecret) {
		t.Fatal("a secret typed into the form is still in the page")
	}
}
