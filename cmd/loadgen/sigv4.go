package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The SigV4 row (-credentials sigv4): the JSON-RPC agent behind AWS Signature Version 4. The
// stub agent checks each call's signature by signing the call again with the AWS SDK for Go
// v2's signer (the one the connector uses, but through none of the connector's code), and the
// direct side signs its calls with the same signer, so "added" beside the API key's row is
// the connector's signing cost. botocore checks the connector's signatures in its tests
// (internal/sigv4/sigv4test); here the check only has to be real and cheap.

// Where the row's key signs for: AgentCore's signing name, a fixed region.
const (
	sigv4Region  = "us-east-1"
	sigv4Service = "bedrock-agentcore"
	amzDate      = "20060102T150405Z"
	// sigv4MaxSkew is how far X-Amz-Date may be from the agent's clock, as AWS allows.
	sigv4MaxSkew = 5 * time.Minute
)

// awsKey signs and checks the SigV4 row's calls. Safe for concurrent use: one v4.Signer, whose
// derived signing key is cached per day, as any long-lived client and service would keep it.
type awsKey struct {
	creds  aws.Credentials
	signer *v4.Signer
}

func newAWSKey(id, secret string) *awsKey {
	return &awsKey{creds: aws.Credentials{AccessKeyID: id, SecretAccessKey: secret}, signer: v4.NewSigner()}
}

// sign signs req, whose body is body, now.
func (k *awsKey) sign(req *http.Request, body []byte) error {
	sum := sha256.Sum256(body)
	return k.signer.SignHTTP(context.Background(), k.creds, req, hex.EncodeToString(sum[:]), sigv4Service, sigv4Region, time.Now().UTC())
}

// verify checks r's signature: its credential scope is the key's, its X-Amz-Date recent, and
// the Authorization the SDK makes for the headers it names, its URL and body, at its own time,
// is the one it carries.
func (k *awsKey) verify(r *http.Request, body []byte) error {
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return errors.New("no AWS4-HMAC-SHA256 Authorization header")
	}
	var scope, signed string
	for _, part := range strings.Split(auth, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch name {
		case "Credential":
			scope = value
		case "SignedHeaders":
			signed = value
		}
	}
	when, err := time.Parse(amzDate, r.Header.Get("X-Amz-Date"))
	if err != nil {
		return errors.New("no valid X-Amz-Date")
	}
	if d := time.Since(when); d > sigv4MaxSkew || d < -sigv4MaxSkew {
		return fmt.Errorf("X-Amz-Date %s is more than %s from now", when.Format(amzDate), sigv4MaxSkew)
	}
	if want := k.creds.AccessKeyID + "/" + when.Format("20060102") + "/" + sigv4Region + "/" + sigv4Service + "/aws4_request"; scope != want {
		return fmt.Errorf("credential scope %q, want %q", scope, want)
	}
	again := &http.Request{Method: r.Method, Host: r.Host, ContentLength: r.ContentLength, Header: make(http.Header, 4),
		URL: &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}}
	for _, h := range strings.Split(signed, ";") {
		switch h {
		case "host", "content-length", "x-amz-date":
		default:
			vs := r.Header.Values(h)
			if len(vs) == 0 {
				return fmt.Errorf("signed header %s not received", h)
			}
			again.Header[http.CanonicalHeaderKey(h)] = vs
		}
	}
	sum := sha256.Sum256(body)
	if err := k.signer.SignHTTP(r.Context(), k.creds, again, hex.EncodeToString(sum[:]), sigv4Service, sigv4Region, when); err != nil {
		return fmt.Errorf("sign again: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(again.Header.Get("Authorization")), []byte(r.Header.Get("Authorization"))) != 1 {
		return errors.New("the signature does not match")
	}
	return nil
}
