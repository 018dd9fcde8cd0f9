package console

import (
	_ "embed"
	"net/http"
)

// openAPIDoc documents every route in s.routes; TestOpenAPIMatchesRoutes keeps the two equal.
//
//go:embed openapi.json
var openAPIDoc []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(openAPIDoc)
	return err
}
