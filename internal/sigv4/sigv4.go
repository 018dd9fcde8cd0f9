// Package sigv4 signs agent requests with AWS Signature Version 4 (Amazon Bedrock AgentCore
// Runtime and anything behind IAM), using the AWS SDK for Go v2's signer: nothing here computes
// a signature by hand. It decides only what is signed: the headers that go on the wire, the
// payload hash, and the time.
//
// It never puts the secret access key or the session token in an error.
package sigv4

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/a2a-connector/a2a-connector/internal/credential"
)

// ContentSHA256Header names the payload hash a request was signed with when it is not the
// hash of its body: the gRPC binding signs UNSIGNED-PAYLOAD (its body is framed by the gRPC
// library after the signature is made), and says so here, as S3 clients do.
const ContentSHA256Header = "X-Amz-Content-Sha256"

// UnsignedPayload is the payload hash of a request whose body the signature does not cover.
const UnsignedPayload = "UNSIGNED-PAYLOAD"

// Signer signs requests with one AWS key for one region and service. It is safe for
// concurrent use.
type Signer struct {
	creds   aws.Credentials
	region  string
	service string
	signer  *v4.Signer
	now     func() time.Time
}

// New returns a Signer of key k; now is the clock (nil: time.Now).
func New(k *credential.AWSKey, now func() time.Time) *Signer {
	if now == nil {
		now = time.Now
	}
	return &Signer{
		creds:   aws.Credentials{AccessKeyID: k.AccessKeyID, SecretAccessKey: k.SecretAccessKey, SessionToken: k.SessionToken},
		region:  k.Region,
		service: k.SigningService(),
		signer:  v4.NewSigner(),
		now:     now,
	}
}

// Sign signs req, whose whole body is body (nil: none), at the clock's time: it sets
// Authorization, X-Amz-Date and, with a session token, X-Amz-Security-Token. The payload hash is
// the SHA-256 of body, or the value of an X-Amz-Content-Sha256 header req already has.
//
// Only the headers that go on the wire are signed: a header with no value (the Idempotency-Key
// marker that lets a POST be sent again) is left out, since Go's client does not send it and an
// agent that recomputes the signature would not see it.
func (s *Signer) Sign(req *http.Request, body []byte) error {
	hash := req.Header.Get(ContentSHA256Header)
	if hash == "" {
		sum := sha256.Sum256(body)
		hash = hex.EncodeToString(sum[:])
	}
	signed := *req
	signed.Header = make(http.Header, len(req.Header)+3)
	for k, vs := range req.Header {
		if len(vs) == 0 {
			continue
		}
		switch k {
		case "Authorization", "X-Amz-Date", "X-Amz-Security-Token":
			continue // a previous attempt's
		}
		signed.Header[k] = vs
	}
	// The signer takes no context of its own; it uses it only for its logger.
	if err := s.signer.SignHTTP(context.Background(), s.creds, &signed, hash, s.service, s.region, s.now().UTC()); err != nil {
		return fmt.Errorf("sigv4: sign %s request: %w", req.Method, err)
	}
	for _, k := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		if v, ok := signed.Header[k]; ok {
			req.Header[k] = v
		} else {
			delete(req.Header, k)
		}
	}
	// The signer signs the host without a default port (":443"), and sets req.Host to it so
	// that the Host sent is the one signed.
	req.Host = signed.Host
	return nil
}
