package credential

import (
	"regexp"
	"strings"
)

// DefaultAWSService is the signing name of Amazon Bedrock AgentCore, whose Runtime hosts A2A
// agents: the service an AWS key signs for when the registration names none.
const DefaultAWSService = "bedrock-agentcore"

// AWSKey is an AWS access key whose agent calls are signed with Signature Version 4
// (internal/sigv4). SessionToken is set for temporary credentials (STS), and goes out as
// X-Amz-Security-Token.
type AWSKey struct {
	AccessKeyID     string `json:"accessKeyId"`
	SecretAccessKey string `json:"secretAccessKey"`
	SessionToken    string `json:"sessionToken,omitempty"`
	Region          string `json:"region"`
	Service         string `json:"service,omitempty"`
}

// SigningService is Service, or DefaultAWSService when none is set.
func (k *AWSKey) SigningService() string {
	if k.Service == "" {
		return DefaultAWSService
	}
	return k.Service
}

var (
	// AWS access key ids are upper-case letters and digits (AKIA…, ASIA…); 16 to 128 per IAM.
	awsKeyID = regexp.MustCompile(`^[A-Z0-9]{16,128}$`)
	// Regions and signing names are lower-case words joined by hyphens ("eu-west-1",
	// "bedrock-agentcore"); they are part of the credential scope the agent recomputes.
	awsName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
)

// check reports the first field that cannot work, never quoting the secret or the token.
func (k *AWSKey) check() error {
	const f = "credentials.awsSigV4"
	switch {
	case k == nil:
		return &FieldError{f, "is required"}
	case k.AccessKeyID == "":
		return &FieldError{f + ".accessKeyId", "is required"}
	case !awsKeyID.MatchString(k.AccessKeyID):
		return &FieldError{f + ".accessKeyId", "must be an AWS access key id: 16 to 128 upper-case letters and digits"}
	case k.SecretAccessKey == "":
		return &FieldError{f + ".secretAccessKey", "is required"}
	case !printable(k.SecretAccessKey):
		return &FieldError{f + ".secretAccessKey", "must be printable ASCII without spaces"}
	case k.SessionToken != "" && !printable(k.SessionToken):
		return &FieldError{f + ".sessionToken", "must be printable ASCII without spaces"}
	case k.Region == "":
		return &FieldError{f + ".region", "is required"}
	case len(k.Region) > 64 || !awsName.MatchString(k.Region):
		return &FieldError{f + ".region", `must be an AWS region such as "us-east-1"`}
	case k.Service != "" && (len(k.Service) > 64 || !awsName.MatchString(k.Service)):
		return &FieldError{f + ".service", `must be an AWS signing name such as "bedrock-agentcore"`}
	}
	return nil
}

// printable reports s is visible ASCII: a secret key or session token goes into the HMAC
// and the X-Amz-Security-Token header, where a space or control character is a mistake.
func printable(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r > '~' })
}
