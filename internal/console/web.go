package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"time"
)

// webFiles is the tenant web console: plain HTML, CSS and JavaScript, no build step. The page
// holds no data of its own; it calls the JSON API with the tenant token the user pastes.
//
//go:embed web
var webFiles embed.FS

// webCSP lets the page load only itself: no inline script or style, no third-party origin, no
// framing. Card content is attacker-controlled; the page never turns it into markup, and this
// policy is the second line should that ever slip.
const webCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// apiDocsCSP is the policy of the API reference page (/api-docs). Scripts stay same-origin only;
// styles may be inline because Redoc (styled-components) injects its style elements at run
// time. The page shows only the public OpenAPI document: no token, no tenant data, no card
// content.
const apiDocsCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// cspOf is the Content-Security-Policy of the embedded file name.
func cspOf(name string) string {
	if name == "api-docs.html" {
		return apiDocsCSP
	}
	return webCSP
}

// webAsset is one embedded file, ready to serve.
type webAsset struct {
	body        []byte
	contentType string
	etag        string
}

// webContentType names the only kinds of file the console ships; anything else in web/ is not
// served (nosniff needs a right type, and a guessed one could be wrong).
func webContentType(name string) (string, bool) {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8", true
	case ".js":
		return "text/javascript; charset=utf-8", true
	case ".css":
		return "text/css; charset=utf-8", true
	}
	return "", false
}

// loadWebAssets reads the embedded console once, keyed by file name. The files are compiled in,
// so reading them cannot fail at run time; TestWebAssets proves every one is served.
func loadWebAssets() map[string]webAsset {
	out := map[string]webAsset{}
	entries, _ := fs.ReadDir(webFiles, "web")
	for _, e := range entries {
		ctype, ok := webContentType(e.Name())
		if e.IsDir() || !ok {
			continue
		}
		body, err := webFiles.ReadFile("web/" + e.Name())
		if err != nil {
			continue
		}
		sum := sha256.Sum256(body)
		out[e.Name()] = webAsset{body: body, contentType: ctype, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
	}
	return out
}

// webIndex serves the console page at GET /.
func (s *Server) webIndex(w http.ResponseWriter, r *http.Request) error {
	return s.serveWebAsset(w, r, "index.html")
}

// apiDocs serves the API reference page at GET /api-docs: openapi.json rendered in the
// browser by the vendored Redoc bundle.
func (s *Server) apiDocs(w http.ResponseWriter, r *http.Request) error {
	return s.serveWebAsset(w, r, "api-docs.html")
}

// webAssetFile serves GET /ui/{file}: the page's script and style sheet.
func (s *Server) webAssetFile(w http.ResponseWriter, r *http.Request) error {
	return s.serveWebAsset(w, r, r.PathValue("file"))
}

func (s *Server) serveWebAsset(w http.ResponseWriter, r *http.Request, name string) error {
	a, ok := s.web[name]
	if !ok {
		return &apiError{status: http.StatusNotFound, code: "not_found", detail: "No such file."}
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("Content-Security-Policy", cspOf(name))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	// Asset URLs carry no version, so the browser revalidates every time; the ETag makes that a
	// 304 with no body until the binary changes.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	// ServeContent answers If-None-Match (304), HEAD and ranges; the zero time leaves the ETag
	// as the only validator.
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
	return nil
}
