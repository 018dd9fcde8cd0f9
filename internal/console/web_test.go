package console

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/session"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// wantCSP is the policy the brief for the web console asks for, spelled out here rather than
// read from webCSP, so that a loosened constant fails this test.
const wantCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// wantDocsCSP is the policy of the API reference page: the same, but Redoc's run-time inline
// styles are allowed and forms may go nowhere.
const wantDocsCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// TestWebAssets checks the page and its assets over plain HTTP: status, content type, security
// and cache headers, ETag revalidation, and 404 for anything that is not shipped.
func TestWebAssets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	get := func(path string, header http.Header) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.api.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	checkHeaders := func(path string, resp *http.Response, ctype string) {
		t.Helper()
		csp := wantCSP
		if path == "/api-docs" || path == "/ui/api-docs.html" {
			csp = wantDocsCSP
		}
		for name, want := range map[string]string{
			"Content-Type":            ctype,
			"Content-Security-Policy": csp,
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
			"Cache-Control":           "no-cache",
		} {
			if got := resp.Header.Get(name); got != want {
				t.Errorf("GET %s: %s = %q, want %q", path, name, got, want)
			}
		}
		if etag := resp.Header.Get("ETag"); !regexp.MustCompile(`^"[0-9a-f]{32}"$`).MatchString(etag) {
			t.Errorf("GET %s: ETag = %q, want a quoted strong hash", path, etag)
		}
	}

	// The page.
	resp, body := get("/", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d: %s", resp.StatusCode, body)
	}
	checkHeaders("/", resp, "text/html; charset=utf-8")
	page := string(body)
	for _, want := range []string{`<script src="/ui/app.js" defer></script>`, `href="/ui/style.css"`, `href="/openapi.json"`, `id="token-input"`} {
		if !strings.Contains(page, want) {
			t.Errorf("GET / lacks %s", want)
		}
	}
	// The CSP forbids inline script and style; the page must not need them.
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<script(\s[^>]*)?>[^<\s]`), // a script element with inline code
		regexp.MustCompile(`<style`),
		regexp.MustCompile(`\sstyle=`),
		regexp.MustCompile(`\son[a-z]+=`),
		regexp.MustCompile(`(src|href)="(https?:)?//`), // anything from another origin
	} {
		if loc := bad.FindStringIndex(page); loc != nil {
			t.Errorf("index.html has %q, which the page's own CSP would block or which leaves the origin", page[loc[0]:loc[1]])
		}
	}
	// Every /ui/ reference in the page is shipped.
	for _, m := range regexp.MustCompile(`(?:src|href)="/ui/([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if r, b := get("/ui/"+m[1], nil); r.StatusCode != http.StatusOK {
			t.Errorf("index.html references /ui/%s, which answers %d: %s", m[1], r.StatusCode, b)
		}
	}
	// The API reference page, with its own policy.
	if docs, docsBody := get("/api-docs", nil); docs.StatusCode != http.StatusOK ||
		!strings.Contains(string(docsBody), `<script src="/ui/redoc.standalone.js" defer></script>`) {
		t.Errorf("GET /api-docs = %d: %s", docs.StatusCode, docsBody)
	} else {
		checkHeaders("/api-docs", docs, "text/html; charset=utf-8")
	}

	// Revalidation: the ETag answers 304 with no body; HEAD has the headers and no body.
	etag := resp.Header.Get("ETag")
	if r, b := get("/", http.Header{"If-None-Match": {etag}}); r.StatusCode != http.StatusNotModified || len(b) != 0 {
		t.Errorf("GET / with If-None-Match = %d with %d bytes, want 304 and none", r.StatusCode, len(b))
	}
	if r, _ := get("/", http.Header{"If-None-Match": {`"stale"`}}); r.StatusCode != http.StatusOK {
		t.Errorf("GET / with a stale ETag = %d, want 200", r.StatusCode)
	}
	headReq, _ := http.NewRequestWithContext(t.Context(), http.MethodHead, e.api.URL+"/", nil)
	if r, err := http.DefaultClient.Do(headReq); err != nil || r.StatusCode != http.StatusOK || r.Header.Get("Content-Security-Policy") != wantCSP {
		t.Errorf("HEAD / = %v, %v", r, err)
	} else {
		r.Body.Close()
	}

	// Every shipped file, byte for byte, with its type.
	entries, err := fs.ReadDir(webFiles, "web")
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	var served int
	for _, ent := range entries {
		want, err := webFiles.ReadFile("web/" + ent.Name())
		if err != nil {
			t.Fatal(err)
		}
		ctype, ok := types[filepath.Ext(ent.Name())]
		if !ok {
			t.Errorf("web/%s: a file type the console does not serve; add it to webContentType", ent.Name())
			continue
		}
		r, b := get("/ui/"+ent.Name(), nil)
		if r.StatusCode != http.StatusOK {
			t.Errorf("GET /ui/%s = %d", ent.Name(), r.StatusCode)
			continue
		}
		checkHeaders("/ui/"+ent.Name(), r, ctype)
		if !bytes.Equal(b, want) {
			t.Errorf("GET /ui/%s differs from the embedded file", ent.Name())
		}
		served++
	}
	if served < 3 {
		t.Errorf("served %d files, want at least index.html, app.js and style.css", served)
	}

	// Nothing else: unknown files, nested paths and other top-level paths are 404 problems.
	for _, path := range []string{"/ui/nope.js", "/ui/", "/ui/a/app.js", "/ui/..%2fweb.go", "/index.html", "/nope"} {
		r, b := get(path, nil)
		if r.StatusCode != http.StatusNotFound || r.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("GET %s = %d %q, want a 404 problem: %s", path, r.StatusCode, r.Header.Get("Content-Type"), b)
		}
	}
	// The page is not an API: POST / is a known path with the wrong method.
	r, _ := get("/", nil)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d", r.StatusCode)
	}
	post := e.do(http.MethodPost, "/", "", map[string]string{})
	e.expect(post, http.StatusMethodNotAllowed)
	if code := post.json(t)["code"]; code != "method_not_allowed" {
		t.Errorf("POST / code = %v", code)
	}
}

// chromiumPath finds a Chromium to drive: A2AC_CHROMIUM, else chromium, chromium-browser or
// google-chrome on PATH. Without one the test skips on a developer's machine and fails in CI,
// where a skipped browser test would hide a missing install step.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("A2AC_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const hint = "install it with `apt-get install -y chromium` (as root) or set A2AC_CHROMIUM to a Chrome/Chromium binary"
	if os.Getenv("CI") == "true" {
		t.Fatalf("the web console browser test needs Chromium and none was found (A2AC_CHROMIUM, chromium, chromium-browser, google-chrome): %s", hint)
	}
	t.Skipf("no Chromium found (A2AC_CHROMIUM, chromium, chromium-browser, google-chrome); %s", hint)
	return ""
}

// browser is one headless Chromium tab, plus what the page did that it should not have:
// JavaScript dialogs, uncaught exceptions, and Content-Security-Policy violations.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu         sync.Mutex
	dialogs    []string
	exceptions []string
	security   []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := chromiumPath(t)
	// The flags the machine notes ask for: without the background-networking ones Chromium
	// keeps trying the closed network.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	// The browser outlives no test: the cancels below stop it and wait for the process.
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelTab)
	// A bound for the whole scenario, so a hung browser fails the test instead of the run. The
	// longest scenario takes about 20 s on a busy 2-core machine; only a hung browser waits more.
	ctx, cancelTimeout := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(cancelTimeout)

	b := &browser{t: t, ctx: ctx}
	dialogs := make(chan struct{}, 16)
	err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			b.dialogs = append(b.dialogs, string(ev.Type)+": "+ev.Message)
			select {
			case dialogs <- struct{}{}:
			default:
			}
		case *runtime.EventExceptionThrown:
			b.exceptions = append(b.exceptions, exceptionText(ev.ExceptionDetails))
		case *log.EventEntryAdded:
			if ev.Entry != nil && ev.Entry.Source == log.EntrySourceSecurity {
				b.security = append(b.security, ev.Entry.Text)
			}
		}
	})
	if err != nil {
		t.Fatalf("start Chromium (%s): %v", exe, err)
	}
	// A dialog blocks the page; dismiss it so the test reports it instead of timing out. The
	// goroutine ends with the tab's context.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-dialogs:
				_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
			}
		}
	}()
	t.Cleanup(wg.Wait)
	t.Cleanup(cancelTimeout) // runs first (LIFO): ends the goroutine before wg.Wait
	return b
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return "exception"
	}
	s := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		s += " " + d.Exception.Description
	}
	return fmt.Sprintf("%s (%s:%d)", s, d.URL, d.LineNumber)
}

// do runs actions and fails the test on the first error, with what the page shows.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v\npage text:\n%s", what, err, b.pageText())
	}
}

// evalJS evaluates a JavaScript expression and decodes its value into T.
func evalJS[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v\npage text:\n%s", expr, err, b.pageText())
	}
	return v
}

// waitUntil polls a JavaScript function of (args...) until it returns true. The bound is
// generous for a slow shared machine; the scenario normally takes a few seconds in all.
func (b *browser) waitUntil(what, fn string, args ...any) {
	b.t.Helper()
	_, err := chromedp.Run(b.ctx, chromedp.PollFunction[bool](fn,
		chromedp.WithPollingArgs(args...), chromedp.WithPollingTimeout(15*time.Second), chromedp.WithPollingInterval(25*time.Millisecond)))
	if err != nil {
		b.t.Fatalf("waiting until %s: %v\npage text:\n%s", what, err, b.pageText())
	}
}

// waitText waits until the element sel exists and its text contains every one of want.
func (b *browser) waitText(sel string, want ...string) {
	b.t.Helper()
	b.waitUntil(fmt.Sprintf("%s shows %q", sel, want), `(sel, want) => {
		const el = document.querySelector(sel);
		return !!el && want.every((w) => el.textContent.includes(w));
	}`, sel, want)
}

// text returns the text of the first element matching sel ("" when there is none).
func (b *browser) text(sel string) string {
	b.t.Helper()
	return evalJS[string](b, fmt.Sprintf(`(document.querySelector(%s) || {}).textContent || ""`, jsString(sel)))
}

func (b *browser) pageText() string {
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return v
}

// typeInto empties the input sel and types v into it as key events, as a person pastes.
func (b *browser) typeInto(sel, v string) {
	b.t.Helper()
	// chromedp's SetValue reports an error for an empty value, so the field is emptied here.
	b.do("type into "+sel,
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%s).value = ""`, jsString(sel))),
		chromedp.SendKeys(chromedp.CSS(sel), v))
	if got := evalJS[string](b, fmt.Sprintf(`document.querySelector(%s).value`, jsString(sel))); got != v {
		b.t.Fatalf("%s holds %q after typing %q", sel, got, v)
	}
}

func (b *browser) click(sel string) {
	b.t.Helper()
	b.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// problemRows reads the rows of the problems tables under sel as [severity, path, code, message].
func (b *browser) problemRows(sel string) [][]string {
	b.t.Helper()
	return evalJS[[][]string](b, fmt.Sprintf(`[...document.querySelectorAll(%s + " tr.problem")].map((tr) => [...tr.cells].map((c) => c.textContent))`, jsString(sel)))
}

func jsString(s string) string {
	j, _ := json.Marshal(s)
	return string(j)
}

// snap saves a screenshot when A2AC_WEB_SCREENSHOTS names a folder, for a person to look at.
func (b *browser) snap(name string) {
	dir := os.Getenv("A2AC_WEB_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
	}
}

// snapViewport saves a screenshot of what the window shows when A2AC_WEB_SCREENSHOTS names a
// folder (for pages far taller than a screen).
func (b *browser) snapViewport(name string) {
	dir := os.Getenv("A2AC_WEB_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
	}
}

// snapElement saves a screenshot of the element sel when A2AC_WEB_SCREENSHOTS names a folder.
func (b *browser) snapElement(name, sel string) {
	dir := os.Getenv("A2AC_WEB_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
	}
}

// TestWebConsoleInBrowser drives the real page in headless Chromium against a real console
// (real Postgres), real HTTPS card servers and the real demo agent: token, validate (problems
// table, 502 reason, a hostile card shown as text), register (422, 201, 409), set a key, try
// it, refresh with a broken card, disable, delete, forget the token.
func TestWebConsoleInBrowser(t *testing.T) {
	t.Parallel()
	b := newBrowser(t) // first: skips (or fails in CI) before anything else starts

	demo := agent.New(agent.Options{APIKey: theAPIKey})
	demoSrv := httptest.NewServer(demo.Handler())
	t.Cleanup(demoSrv.Close)
	cards := fixtureagent.NewCardHost(t, true)
	roots := x509.NewCertPool()
	roots.AddCert(cards.Certificate())
	// The demo agent serves plain HTTP on loopback, as in local development.
	policy := netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	box, err := secret.New(bytes.Repeat([]byte{5}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	inv := invoke.New(invoke.Options{Client: netguard.NewClient(policy, netguard.ClientOptions{InlineHTTP1: true}), Secrets: box})
	t.Cleanup(func() { _ = inv.Close(context.Background()) })
	logs := &syncBuffer{}
	st := store.New(testDB.Pool)
	router := session.New(session.Config{Store: st, Invoker: inv})
	t.Cleanup(router.Wait) // registered before the API's Close, so it runs after it
	srv := New(Config{
		Store: st,
		Cards: cardfetch.New(cardfetch.Options{AllowInsecureHTTP: true,
			Client: netguard.NewClient(policy, netguard.ClientOptions{MaxRedirects: 3, RootCAs: roots})}),
		Secrets:    box,
		AdminToken: adminToken,
		Logger:     slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Invoker:    inv,
		Router:     router,
	})
	api := httptest.NewServer(srv.Handler())
	t.Cleanup(api.Close)
	e := &env{t: t, api: api, cards: cards, logs: logs}
	_, token := e.newTenant("web console")

	badURL := cards.Set("/bad.json", card("Painter", "image/png"))
	const hostile = `<img src=x onerror=alert(1)>`
	hostileDesc, _ := json.Marshal(hostile + " Answers questions.")
	hostileCard := strings.Replace(card("<b>Bold</b> agent", "text/plain"), `"Answers questions."`, string(hostileDesc), 1)
	hostileURL := cards.Set("/hostile.json", hostileCard)
	closedURL := "https://" + closedPort(t) + "/card.json"

	// Open the page; nothing is stored yet.
	b.do("open the console", chromedp.Navigate(api.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token-input")))
	if evalJS[bool](b, `!document.querySelector("#workspace").hidden`) {
		t.Fatal("the workspace shows before a token is set")
	}

	// A wrong token is refused in words, and not kept.
	b.typeInto("#token-input", "a2ac_not-a-real-token")
	b.click("#token-save")
	b.waitText("#token-msg", "did not accept this token")
	if got := evalJS[string](b, `String(sessionStorage.getItem("a2ac.tenantToken"))`); got != "null" {
		t.Fatalf("a refused token stays in sessionStorage: %q", got)
	}

	// Paste the right one.
	b.typeInto("#token-input", token)
	b.click("#token-save")
	b.waitText("#agents", "No agents yet")
	b.waitUntil("the workspace shows", `() => !document.querySelector("#workspace").hidden`)
	if got := evalJS[string](b, `sessionStorage.getItem("a2ac.tenantToken")`); got != token {
		t.Fatalf("sessionStorage token = %q, want the pasted one", got)
	}
	if n := evalJS[int](b, `localStorage.length`); n != 0 {
		t.Fatalf("localStorage has %d entries; the token belongs in sessionStorage only", n)
	}
	if loc := evalJS[string](b, `location.href + " " + document.cookie`); strings.Contains(loc, token) {
		t.Fatalf("the token is in the URL or a cookie: %s", loc)
	}
	if v := evalJS[string](b, `document.querySelector("#token-input").value`); v != "" {
		t.Fatal("the token stays in the input after use")
	}

	// Validate an invalid card: all problems in a table, errors first.
	b.typeInto("#card-url", badURL)
	b.click("#validate")
	b.waitText("#add-result .validation", "Invalid")
	rows := b.problemRows("#add-result")
	var found bool
	seenWarning := false
	for _, r := range rows {
		if len(r) != 4 {
			t.Fatalf("problem row %q: want severity, path, code, message", r)
		}
		if r[0] == "warning" {
			seenWarning = true
		} else if seenWarning {
			t.Errorf("error row %q after a warning: errors must come first", r)
		}
		if r[0] == "error" && r[1] == "defaultOutputModes" && r[2] == "unsupported_mode" && strings.Contains(r[3], "text/plain") {
			found = true
		}
	}
	if !found {
		t.Fatalf("problems table = %q, want the error defaultOutputModes/unsupported_mode", rows)
	}
	if got := b.text("#add-result .resolved"); got != badURL {
		t.Errorf("resolved card URL shown = %q, want %q", got, badURL)
	}
	if !evalJS[bool](b, `document.querySelector("#add-result tr.problem td.path code") !== null`) {
		t.Error("the JSON path is not set in code (monospace)")
	}
	b.waitText("#add-result .preview", "Painter", "Answers questions.", "Ask")
	// The interface the connector would call comes from the validation, not the card's url.
	b.waitText("#add-result .preview .f-calls", "A2A 0.2.5 — https://agent.example.com/a2a")
	b.snap("1-validate-invalid")

	// On a phone the page does not scroll sideways; the wide table scrolls in its own box.
	b.do("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.waitUntil("no horizontal page scroll on a phone", `() => document.documentElement.scrollWidth <= window.innerWidth + 1`)
	b.snap("2-phone")
	b.do("laptop viewport", chromedp.EmulateViewport(1280, 900))

	// Registering the invalid card is a 422 with the same table.
	b.click("#register")
	b.waitText("#add-result .problem-box", "nothing was registered", "defaultOutputModes", "unsupported_mode")

	// An unreachable card: the reason in plain words.
	b.typeInto("#card-url", closedURL)
	b.click("#validate")
	b.waitText("#add-result .problem-box", "could not be fetched", "refused", "nothing is listening")

	// A hostile card is text, not markup: no img element, no dialog.
	b.typeInto("#card-url", hostileURL)
	b.click("#validate")
	b.waitText("#add-result .validation", "Valid")
	if n := evalJS[int](b, `document.querySelectorAll("img, b").length`); n != 0 {
		t.Fatalf("the card's markup became %d elements", n)
	}
	b.waitText("#add-result .preview", hostile, "<b>Bold</b> agent")
	b.snap("3-validate-hostile")

	// Register the hostile card too (it is valid); it is listed as text as well.
	b.click("#register")
	b.waitText("#add-result", "Registered")
	b.waitText("#agents", "<b>Bold</b> agent", hostile, "Calls: A2A")
	if n := evalJS[int](b, `document.querySelectorAll("img, b").length`); n != 0 {
		t.Fatalf("the listed card's markup became %d elements", n)
	}

	// The demo agent's card asks for a key: validating it shows the add form's key field.
	b.typeInto("#card-url", demoSrv.URL)
	b.click("#validate")
	b.waitText("#add-result .validation", "Valid")
	b.waitUntil("the key field shows", `() => !document.querySelector("#api-key-field").hidden`)

	// Register the demo agent. It requires an API key, which is not given yet.
	b.click("#register")
	b.waitText("#add-result", "Registered “超级AI助理”", "requires an API key")
	r := e.do("GET", "/v1/agents", token, nil)
	e.expect(r, http.StatusOK)
	var list struct {
		Agents []struct {
			ID, Name, CardURL string
			Enabled           bool
		}
	}
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, a := range list.Agents {
		ids[a.CardURL] = a.ID
	}
	demoID, hostileID := ids[demoSrv.URL], ids[hostileURL]
	if demoID == "" || hostileID == "" || len(list.Agents) != 2 {
		t.Fatalf("after registering in the page, the API lists %s", r.body)
	}
	demoSel := fmt.Sprintf(`article.agent[data-agent-id=%q]`, demoID)
	hostileSel := fmt.Sprintf(`article.agent[data-agent-id=%q]`, hostileID)
	b.waitText(demoSel, "超级AI助理", "needs an API key", "streaming", "revision 1", "enabled")

	// Registering it again is a 409.
	b.typeInto("#card-url", demoSrv.URL)
	b.click("#register")
	b.waitText(`#add-result .problem-box[data-code="already_registered"]`, "already registered for your tenant, as “超级AI助理”")

	// Without its key the demo agent cannot be tried: Send is disabled, and the page says why.
	// The hostile card asks for no key, so it has no key field at all. Each agent's placeholder
	// is an example from its own card.
	b.waitText(demoSel+" .try-blocked", "needs an API key")
	if !evalJS[bool](b, fmt.Sprintf(`document.querySelector(%s).disabled && document.querySelector(%s).disabled`,
		jsString(demoSel+" .try-send"), jsString(demoSel+" .try-input"))) {
		t.Fatal("Send is enabled on an agent missing its API key")
	}
	// A card without security asks for no key: neither the add form nor its agent shows a key
	// field.
	plainURL := cards.Set("/plain.json", strings.Replace(card("Plain", "text/plain"), `"security": ["apiKey"],`, "", 1))
	b.typeInto("#card-url", plainURL)
	b.click("#validate")
	b.waitText("#add-result .validation", "Valid")
	if !evalJS[bool](b, `document.querySelector("#api-key-field").hidden`) {
		t.Fatal("the add form shows an API key field for a card that asks for none")
	}
	b.click("#register")
	b.waitText("#add-result", "Registered “Plain”")
	const plainJS = `[...document.querySelectorAll("article.agent")].find((a) => a.querySelector(".agent-name").textContent === "Plain")`
	b.waitUntil("the plain agent is listed", `() => !!(`+plainJS+`)`)
	if evalJS[bool](b, plainJS+`.querySelector(".key-input") !== null`) {
		t.Fatal("an agent whose card asks for no key shows a key field")
	}
	if !evalJS[bool](b, plainJS+`.querySelector(".badges").textContent.includes("no API key needed")`) {
		t.Fatal("the plain agent lacks its 'no API key needed' badge")
	}
	if ph := evalJS[string](b, fmt.Sprintf(`document.querySelector(%s).placeholder`, jsString(demoSel+" .try-input"))); ph != "e.g. 重复我说的话" {
		t.Errorf("demo agent placeholder = %q, want its first skill example", ph)
	}
	if ph := evalJS[string](b, fmt.Sprintf(`document.querySelector(%s).placeholder`, jsString(hostileSel+" .try-input"))); strings.Contains(ph, "1与2") {
		t.Errorf("hostile agent placeholder = %q, not from its card", ph)
	}

	// Set the key: the badge goes, the field is empty again, and the key is nowhere in the page.
	if v := evalJS[string](b, fmt.Sprintf(`document.querySelector(%s).value`, jsString(demoSel+" .key-input"))); v != "" {
		t.Fatalf("the key field is pre-filled with %q", v)
	}
	b.typeInto(demoSel+" .key-input", theAPIKey)
	b.click(demoSel + " .key-save")
	b.waitText(demoSel, "API key set.", "API key set")
	if strings.Contains(b.text(demoSel+" .badges"), "needs an API key") {
		t.Fatal("the 'needs an API key' badge stays after the key was set")
	}
	keyInPage := evalJS[bool](b, fmt.Sprintf(`document.documentElement.outerHTML.includes(%[1]s) ||
		[...document.querySelectorAll("input")].some((i) => i.value.includes(%[1]s))`, jsString(theAPIKey)))
	if keyInPage {
		t.Fatal("the API key is still in the page after saving it")
	}

	if evalJS[bool](b, `[...document.querySelectorAll("article.agent")].some((a) => /\bnull\b|undefined/.test(a.innerText))`) {
		t.Fatal(`an agent's card shows "null" or "undefined"`)
	}

	// Try it: a conversation through INPUT_REQUIRED to COMPLETED, as a dialog session runs.
	lastTurn := demoSel + " .try-log > li.turn:last-child"
	b.typeInto(demoSel+" .try-input", "帮我算加法")
	b.click(demoSel + " .try-send")
	b.waitText(lastTurn+" .outcome", "INPUT_REQUIRED")
	b.waitText(lastTurn+" .asks", "The agent asks:", "两个数")
	b.waitText(lastTurn+" .hold", "holds this conversation until")
	b.waitText(demoSel+" .try-send", "Answer")
	b.snapElement("try-it-asks", demoSel)
	b.typeInto(demoSel+" .try-input", "3和5")
	b.click(demoSel + " .try-send")
	b.waitText(lastTurn+" .outcome", "COMPLETED")
	if reply := b.text(lastTurn + " .reply"); !strings.Contains(reply, "8") {
		t.Fatalf("try-it reply = %q, want the sum 8", reply)
	}
	b.waitText(lastTurn+" .ids", "Continued task")
	if n := evalJS[int](b, fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(demoSel+" .try-log > li.turn"))); n != 2 {
		t.Fatalf("the conversation shows %d turns, want 2", n)
	}
	b.waitText(demoSel+" .try-send", "Send")
	b.snap("4-try-it")
	b.snapElement("try-it-completed", demoSel)

	// The agent declines what it cannot do: the platform would take the turn back, and the page
	// shows the agent's own words.
	b.typeInto(demoSel+" .try-input", "tell me a joke")
	b.click(demoSel + " .try-send")
	b.waitText(lastTurn+" .outcome", "HANDBACK", "declined")
	b.waitText(lastTurn+" .said", "The agent said:", "Sorry, I can't help with that")
	if got := b.text(lastTurn); strings.Contains(got, "(no reply text)") {
		t.Fatalf("HANDBACK turn shows %q", got)
	}
	b.snapElement("try-it-handback", lastTurn)

	// Device commands: the final metadata as a small table.
	b.typeInto(demoSel+" .try-input", "进行闪光")
	b.click(demoSel + " .try-send")
	b.waitText(lastTurn+" .outcome", "COMPLETED")
	b.waitText(lastTurn+" table.commands tr.command", "flash", "times: 3", "color: white")
	b.snapElement("try-it-device-commands", lastTurn)

	// Ending a held conversation releases it; the next message starts a new one.
	b.typeInto(demoSel+" .try-input", "帮我算加法")
	b.click(demoSel + " .try-send")
	b.waitText(lastTurn+" .outcome", "INPUT_REQUIRED")
	b.click(demoSel + " .try-end")
	b.waitText(demoSel+" .try-msg", "Conversation ended", "hold was released")
	if n := evalJS[int](b, fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(demoSel+" .try-log"))); n != 0 {
		t.Fatal("the ended conversation is still shown")
	}
	b.waitText(demoSel+" .try-send", "Send")

	// Refresh with a broken card: 422 problems, and the old revision stays live.
	cards.Set("/hostile.json", card("Painter", "image/png"))
	b.click(hostileSel + " .refresh")
	b.waitText(hostileSel+" .agent-msg", "revision 1 stays live", "defaultOutputModes", "unsupported_mode")
	b.snap("5-refresh-invalid")

	// Disable: the list says so, and so does the API.
	b.click(demoSel + " .toggle")
	b.waitUntil("the demo agent shows disabled", `(sel) => {
		const a = document.querySelector(sel);
		return !!a && a.classList.contains("disabled") && a.querySelector(".badges").textContent.includes("disabled");
	}`, demoSel)
	b.waitText(demoSel+" .try-blocked", "disabled")
	if !evalJS[bool](b, fmt.Sprintf(`document.querySelector(%s).disabled`, jsString(demoSel+" .try-send"))) {
		t.Fatal("Send is enabled on a disabled agent")
	}
	r = e.do("GET", "/v1/agents/"+demoID, token, nil)
	e.expect(r, http.StatusOK)
	if r.json(t)["enabled"] != false {
		t.Fatalf("after Disable in the page the API says %s", r.body)
	}

	// Delete, after the inline confirmation.
	b.click(demoSel + " .delete")
	b.click(demoSel + " .delete-confirm")
	b.waitUntil("the demo agent is gone", `(sel) => document.querySelector(sel) === null`, demoSel)
	b.waitText("#agents-msg", "Deleted “超级AI助理”")
	e.expect(e.do("GET", "/v1/agents/"+demoID, token, nil), http.StatusNotFound)

	// Forget the token: storage emptied and the tenant's data gone from the page.
	b.click("#token-forget")
	b.waitUntil("the workspace hides", `() => document.querySelector("#workspace").hidden`)
	if got := evalJS[string](b, `String(sessionStorage.getItem("a2ac.tenantToken"))`); got != "null" {
		t.Fatalf("sessionStorage still holds %q after Forget", got)
	}
	if n := evalJS[int](b, `document.querySelectorAll("article.agent").length`); n != 0 {
		t.Fatalf("%d agents still in the page after Forget", n)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.dialogs) > 0 {
		t.Errorf("the page opened dialogs: %q", b.dialogs)
	}
	if len(b.exceptions) > 0 {
		t.Errorf("the page threw: %q", b.exceptions)
	}
	if len(b.security) > 0 {
		t.Errorf("Content-Security-Policy violations: %q", b.security)
	}
	if strings.Contains(logs.String(), theAPIKey) || strings.Contains(logs.String(), token) {
		t.Error("the server logs hold the API key or the token")
	}
}

// TestRegistrationAnswersAndTokensInBrowser drives, in headless Chromium against a real console
// (real Postgres, a real HTTPS card server), what the page makes of the API's answers besides a
// plain success: a card URL that leads nowhere (422 card_url_unusable, its own lead and a "Why:"
// line), a second registration of one agent (409 already_registered naming the agent, with a
// button that goes to it), a second card URL for one endpoint (201 with a duplicate_endpoint
// warning), a refresh that finds the same card ("unchanged") and one that does not, and the
// tenant's tokens: listed by id, the current one marked, one revoked behind a confirmation, and
// the page signed out when its own token is revoked.
func TestRegistrationAnswersAndTokensInBrowser(t *testing.T) {
	t.Parallel()
	b := newBrowser(t) // first: skips (or fails in CI) before anything else starts
	e := newEnv(t)
	tenantID, token, tokenID := e.newTenantWithID("registration answers")
	r := e.do("POST", "/v1/tenants/"+tenantID+"/tokens", adminToken, nil)
	e.expect(r, http.StatusCreated)
	m := r.json(t)
	otherToken, otherID := m["token"].(string), m["tokenId"].(string)

	// Two card URLs, one endpoint (card() calls https://agent.example.com/a2a).
	weatherURL := e.cards.Set("/weather.json", card("Weather", "text/plain"))
	copyURL := e.cards.Set("/copy/weather.json", card("Weather (copy)", "text/plain"))
	missingURL := e.cards.URL + "/nothing/here.json" // the card server answers 404

	b.do("open the console", chromedp.Navigate(e.api.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token-input")))
	b.typeInto("#token-input", token)
	b.click("#token-save")
	b.waitText("#agents", "No agents yet")

	// Your tokens: both, by id, the one this tab uses marked; never a token itself.
	currentSel := fmt.Sprintf(`#tokens tr.token[data-token-id=%q]`, tokenID)
	otherSel := fmt.Sprintf(`#tokens tr.token[data-token-id=%q]`, otherID)
	b.waitText("#tokens table.tokens", "2 tokens", tokenID, otherID)
	b.waitText(currentSel+" .token-id", "current")
	if got := b.text(otherSel + " .token-id"); strings.Contains(got, "current") {
		t.Errorf("the other token is marked current: %q", got)
	}
	if got := b.text(otherSel + " .token-used"); got != "never" {
		t.Errorf("the unused token's last use = %q, want never", got)
	}
	if got := b.text(currentSel + " .token-used"); got == "never" || got == "" {
		t.Errorf("the token in use shows last use %q", got)
	}
	if evalJS[bool](b, fmt.Sprintf(`document.documentElement.outerHTML.includes(%s) || document.documentElement.outerHTML.includes(%s)`,
		jsString(otherToken), jsString(token))) {
		t.Fatal("a token is in the page")
	}
	// On a phone the token list is labelled lines; the page does not scroll sideways.
	b.do("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.waitUntil("no horizontal page scroll on a phone", `() => document.documentElement.scrollWidth <= window.innerWidth + 1`)
	b.do("laptop viewport", chromedp.EmulateViewport(1280, 900))

	// A card URL that leads nowhere: its own lead and why, not "the card is not valid".
	b.typeInto("#card-url", missingURL)
	b.click("#register")
	unusable := `#add-result .problem-box[data-code="card_url_unusable"]`
	b.waitText(unusable+" .lead", "leads to no card", "nothing was registered")
	b.waitText(unusable+" .reason", "Why: ", "HTTP error (4xx)", "reason: http_status")
	b.waitText(unusable+" .detail", "404")
	if got := b.text("#add-result"); strings.Contains(got, "not valid") {
		t.Errorf("card_url_unusable reads as an invalid card: %q", got)
	}
	b.snapElement("register-card-url-unusable", "#add-section")
	// Validating it says the same.
	b.click("#validate")
	b.waitText(unusable+" .lead", "leads to no card")
	// A blocked address is not "no card": the headline says the platform does not call it.
	b.typeInto("#card-url", "https://169.254.169.254/latest/meta-data")
	b.click("#validate")
	b.waitText(unusable+" .reason", "reason: blocked_address")
	b.waitText(unusable+" .lead", "leads to a private or reserved address, which the platform does not call")
	b.click("#register")
	b.waitText(unusable+" .lead", "private or reserved address", "nothing was registered")
	if got := b.text(unusable + " .lead"); strings.Contains(got, "no card") {
		t.Errorf("a blocked address reads as a URL without a card: %q", got)
	}

	// Register the agent; registering it again names it and goes to it.
	b.typeInto("#card-url", weatherURL)
	b.click("#register")
	b.waitText("#add-result", "Registered “Weather”")
	if n := evalJS[int](b, `document.querySelectorAll("#add-result .endpoint-warning").length`); n != 0 {
		t.Errorf("the first registration shows %d endpoint warnings", n)
	}
	weatherID := e.agentIDByCardURL(token, weatherURL)
	weatherSel := fmt.Sprintf(`article.agent[data-agent-id=%q]`, weatherID)
	b.waitText(weatherSel, "Weather")
	b.typeInto("#card-url", weatherURL)
	b.click("#register")
	dup := `#add-result .problem-box[data-code="already_registered"]`
	b.waitText(dup+" .lead", "already registered for your tenant, as “Weather”", "nothing was registered")
	b.waitText(dup+" .detail", weatherID)
	b.waitText(dup+" .show-agent", "Show “Weather”")
	b.snapElement("register-already-registered", "#add-section")
	b.click(dup + " .show-agent")
	b.waitUntil("the existing agent is highlighted and focused", `(sel) => {
		const a = document.querySelector(sel);
		return !!a && a.classList.contains("highlight") && a.contains(document.activeElement);
	}`, weatherSel)
	// The preview says so before registering: not "this card can be registered". Clicked from
	// script: the highlight above scrolls the page, and a mouse click aimed before a layout
	// shift can land beside the button on a loaded machine.
	evalJS[bool](b, `(document.querySelector("#validate").click(), true)`)
	b.waitText("#add-result .validation .verdict.registered", "already registered for your tenant, as “Weather”", "refused")
	b.waitText("#add-result .validation .verdict .show-agent", "Show “Weather”")
	if got := b.text("#add-result .validation"); strings.Contains(got, "can be registered") {
		t.Errorf("the preview of a registered card says it can be registered: %q", got)
	}

	// Another card URL for the same endpoint registers, with the warning, and a way to the other.
	b.typeInto("#card-url", copyURL)
	b.click("#register")
	b.waitText("#add-result", "Registered “Weather (copy)”")
	b.waitText("#add-result .endpoint-warning", "Same endpoint as another of your agents", weatherID, "https://agent.example.com/a2a")
	b.waitText("#add-result .endpoint-warning .show-agent", "Show “Weather”")
	b.snapElement("register-duplicate-endpoint", "#add-result")
	copyID := e.agentIDByCardURL(token, copyURL)
	copySel := fmt.Sprintf(`article.agent[data-agent-id=%q]`, copyID)
	b.waitText(copySel, "Weather (copy)")
	if got := b.text("#agents"); strings.Contains(got, "duplicate_endpoint") {
		t.Errorf("the list shows duplicate_endpoint as a card warning: %q", got)
	}

	// A refresh that finds the same card keeps the revision and says so, with the endpoint
	// warning; one that finds another card makes revision 2.
	b.click(weatherSel + " .refresh")
	b.waitText(weatherSel+" .agent-msg", "Card unchanged (revision 1)")
	b.waitText(weatherSel+" .agent-msg .endpoint-warning", copyID)
	b.waitText(weatherSel+" .agent-msg .endpoint-warning .show-agent", "Show “Weather (copy)”")
	if got := b.text(weatherSel + " .agent-msg"); strings.Contains(got, "refreshed") {
		t.Errorf("an unchanged refresh reads %q", got)
	}
	if got := b.text(weatherSel + " .badges"); !strings.Contains(got, "revision 1") || strings.Contains(got, "revision 2") {
		t.Errorf("badges after an unchanged refresh = %q, want revision 1", got)
	}
	if got := evalJS[string](b, `document.activeElement ? document.activeElement.className : ""`); !strings.Contains(got, "refresh") {
		t.Errorf("focus after refresh is on %q, want the Refresh button", got)
	}
	b.snapElement("refresh-unchanged", weatherSel)
	e.cards.Set("/weather.json", strings.Replace(card("Weather", "text/plain"), `"1.0.0"`, `"1.0.1"`, 1))
	b.click(weatherSel + " .refresh")
	b.waitText(weatherSel+" .agent-msg", "Card refreshed: revision 2 is live")
	b.waitText(weatherSel+" .badges", "revision 2", "version 1.0.1")

	// Revoke the other token: a confirmation first (Cancel puts focus back), then it is gone,
	// and the API refuses it.
	b.click(otherSel + " .token-revoke")
	b.waitText("#tokens .tokens-confirm", "Revoke token "+otherID+"?", "refused from its next request")
	if !evalJS[bool](b, `document.activeElement === document.querySelector("#tokens .token-revoke-cancel")`) {
		t.Error("the confirmation does not take focus to Cancel")
	}
	b.click("#tokens .token-revoke-cancel")
	b.waitUntil("the confirmation hides, focus back on Revoke", `(sel) =>
		document.querySelector("#tokens .tokens-confirm").hidden &&
		document.activeElement === document.querySelector(sel + " .token-revoke")`, otherSel)
	b.click(otherSel + " .token-revoke")
	b.waitText("#tokens .tokens-confirm", "Revoke token "+otherID+"?")
	b.snapElement("tokens", "#tokens-section")
	b.click("#tokens .token-revoke-confirm")
	b.waitText("#tokens-msg", "Token "+otherID+" revoked")
	b.waitText("#tokens table.tokens", "1 token")
	if evalJS[bool](b, fmt.Sprintf(`document.querySelector(%s) !== null`, jsString(otherSel))) {
		t.Fatal("the revoked token is still listed")
	}
	e.expect(e.do("GET", "/v1/agents", otherToken, nil), http.StatusUnauthorized)

	// Revoke the token this tab uses: the page signs out and says why.
	b.click(currentSel + " .token-revoke")
	b.waitText("#tokens .tokens-confirm", "the token this tab uses", "signs out")
	b.click("#tokens .token-revoke-confirm")
	b.waitUntil("the workspace hides", `() => document.querySelector("#workspace").hidden`)
	b.waitText("#token-msg", "You revoked the token this tab used", tokenID, "signed out")
	if got := evalJS[string](b, `String(sessionStorage.getItem("a2ac.tenantToken"))`); got != "null" {
		t.Fatalf("sessionStorage still holds %q after revoking it", got)
	}
	if n := evalJS[int](b, `document.querySelectorAll("article.agent, tr.token").length`); n != 0 {
		t.Fatalf("%d agents or tokens still in the page after signing out", n)
	}
	if !evalJS[bool](b, `document.activeElement === document.querySelector("#token-input")`) {
		t.Error("after signing out, focus is not on the token field")
	}
	e.expect(e.do("GET", "/v1/agents", token, nil), http.StatusUnauthorized)

	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.dialogs) > 0 {
		t.Errorf("the page opened dialogs: %q", b.dialogs)
	}
	if len(b.exceptions) > 0 {
		t.Errorf("the page threw: %q", b.exceptions)
	}
	if len(b.security) > 0 {
		t.Errorf("Content-Security-Policy violations: %q", b.security)
	}
}

// agentIDByCardURL is the id of the tenant's agent registered with cardURL.
func (e *env) agentIDByCardURL(token, cardURL string) string {
	e.t.Helper()
	r := e.do("GET", "/v1/agents", token, nil)
	e.expect(r, http.StatusOK)
	var list struct {
		Agents []struct{ ID, CardURL string }
	}
	if err := json.Unmarshal(r.body, &list); err != nil {
		e.t.Fatal(err)
	}
	for _, a := range list.Agents {
		if a.CardURL == cardURL {
			return a.ID
		}
	}
	e.t.Fatalf("no agent with card URL %s in %s", cardURL, r.body)
	return ""
}

// TestScreenshotsLinked keeps docs/screenshots true to the browser tests: every screenshot a
// test takes (snap, snapViewport, snapElement) is committed and linked from README.md, and every
// committed one is still taken by a test, so that none is missing, orphaned or unlinked after
// `make screenshots`. (That they show the current page is up to whoever changes it: run
// `make screenshots` and commit.)
func TestScreenshotsLinked(t *testing.T) {
	t.Parallel()
	sources, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	taken := map[string]bool{}
	call := regexp.MustCompile(`\.snap(?:Viewport|Element)?\("([^"]+)"`)
	for _, f := range sources {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(src), -1) {
			taken[m[1]+".png"] = true
		}
	}
	if len(taken) < 10 {
		t.Fatalf("found %d screenshots taken by the tests (%v); the pattern no longer matches the calls", len(taken), taken)
	}
	const dir = "../../docs/screenshots"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	committed := map[string]bool{}
	for _, ent := range entries {
		committed[ent.Name()] = true
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, m := range regexp.MustCompile(`docs/screenshots/([^)\s"]+)`).FindAllStringSubmatch(string(readme), -1) {
		linked[m[1]] = true
	}
	for name := range taken {
		if !committed[name] {
			t.Errorf("a browser test takes %s, which is not in docs/screenshots: run `make screenshots` and commit it", name)
		}
	}
	for name := range committed {
		if !taken[name] {
			t.Errorf("docs/screenshots/%s is taken by no test any more: delete it (or take it again)", name)
		}
		if !linked[name] {
			t.Errorf("docs/screenshots/%s is not linked from README.md", name)
		}
	}
	for name := range linked {
		if !committed[name] {
			t.Errorf("README.md links docs/screenshots/%s, which does not exist", name)
		}
	}
}

// TestAPIDocsInBrowser opens the API reference page in headless Chromium: the vendored Redoc
// renders openapi.json under the page's policy, with nothing from another origin.
func TestAPIDocsInBrowser(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	e := newEnv(t)
	var (
		mu        sync.Mutex
		requests  int
		offOrigin []string
	)
	if err := chromedp.Listen(b.ctx, func(ev any) {
		req, ok := ev.(*network.EventRequestWillBeSent)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		requests++
		if !strings.HasPrefix(req.Request.URL, e.api.URL+"/") && !strings.HasPrefix(req.Request.URL, "data:") {
			offOrigin = append(offOrigin, req.Request.URL)
		}
	}); err != nil {
		t.Fatal(err)
	}
	b.do("open the API reference", chromedp.Navigate(e.api.URL+"/api-docs"))
	b.waitText("#redoc", "a2a-connector console API", "End a test conversation", "Run one real turn against the agent")
	b.waitUntil("the loading note goes", `() => document.querySelector("#api-docs-msg") === null`)
	b.snapViewport("api-docs")
	// Redoc's sidebar credit shows Redocly's logo from its CDN (no option turns it off). The
	// policy blocks it, and Redoc drops the image when it fails: that one blocked request is
	// expected; any other is not.
	const redocLogo = "https://cdn.redoc.ly/redoc/logo-mini.svg"
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.exceptions) > 0 {
		t.Errorf("the page threw: %q", b.exceptions)
	}
	for _, v := range b.security {
		if !strings.Contains(v, "'"+redocLogo+"'") {
			t.Errorf("Content-Security-Policy violation: %q", v)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	offOrigin = slices.DeleteFunc(offOrigin, func(u string) bool { return u == redocLogo })
	if requests < 4 { // the page, Redoc, api-docs.js, openapi.json
		t.Errorf("saw %d requests; the request listener is not working", requests)
	}
	if len(offOrigin) > 0 {
		t.Errorf("the page requested other origins: %q", offOrigin)
	}
}
