package a2aclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/grpc/credentials"

	"github.com/a2a-connector/a2a-connector/internal/reqauth"
)

// grpcContentSHA256 names the payload hash gRPC calls are signed with: UNSIGNED-PAYLOAD, said
// in the request as S3 clients say it (x-amz-content-sha256), so that a verifier (botocore's
// SigV4Auth, AWS) uses it instead of hashing a body the signature never saw. The body is framed
// and written by grpc-go after the headers go out; per-RPC credentials see only the call.
const (
	grpcContentSHA256 = "X-Amz-Content-Sha256"
	grpcUnsigned      = "UNSIGNED-PAYLOAD"
)

// grpcAuth is the per-RPC credentials of every pooled gRPC connection: for a call whose context
// carries a reqauth.Func (Endpoint.Authorize, put there by grpcMetadata), it authorizes the
// call's HTTP/2 request, POST https://{authority}/{service}/{method} with content-type
// application/grpc, and sends the headers the Func set as metadata. Other calls get nothing.
type grpcAuth struct{}

var _ credentials.PerRPCCredentials = grpcAuth{}

func (grpcAuth) GetRequestMetadata(ctx context.Context, uri ...string) (map[string]string, error) {
	f, _ := reqauth.From(ctx)
	if f == nil {
		return nil, nil
	}
	ri, ok := credentials.RequestInfoFromContext(ctx)
	if !ok || len(uri) == 0 {
		return nil, errors.New("grpc authorize: no method or authority for the call")
	}
	// uri is "https://{authority}/{service}": the authority the call is sent to (grpc-go drops
	// a ":443", which the signer would drop too).
	aud, err := url.Parse(uri[0])
	if err != nil {
		return nil, fmt.Errorf("grpc authorize: %w", err)
	}
	req := &http.Request{
		Method: http.MethodPost,
		URL:    &url.URL{Scheme: "https", Host: aud.Host, Path: ri.Method},
		Host:   aud.Host,
		Header: http.Header{"Content-Type": {"application/grpc"}, grpcContentSHA256: {grpcUnsigned}},
	}
	if err := f(req, nil); err != nil {
		return nil, fmt.Errorf("grpc authorize: %w", err)
	}
	md := make(map[string]string, len(req.Header))
	for k, vs := range req.Header {
		if k == "Content-Type" || len(vs) == 0 {
			continue // grpc-go sends its own, the same
		}
		if k == grpcContentSHA256 && req.Header.Get("X-Amz-Date") == "" {
			continue // nothing signed it: a Func of plain headers (an API key)
		}
		md[strings.ToLower(k)] = vs[0]
	}
	return md, nil
}

// RequireTransportSecurity is false: a signature holds no secret, and the SSRF guard's policy
// decides where plain connections are allowed.
func (grpcAuth) RequireTransportSecurity() bool { return false }
