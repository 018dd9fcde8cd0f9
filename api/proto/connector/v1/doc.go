// Package connectorv1 is the generated Go code of the connector's internal gRPC API
// (connector.proto, package a2aconnector.v1): the dialog engine's client and the server
// interface cmd/connector implements.
//
// It holds generated code only, plus this file. It does no conversion to or from the domain
// types of package connector; that lives, in one file, in the gRPC server that implements
// ConnectorServer. Edit connector.proto and run scripts/proto.sh; never edit the *.pb.go files.
package connectorv1
