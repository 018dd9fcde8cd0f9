package grpcapi

// TenantMetadataKey is the gRPC request metadata key in which a dialog engine may name the
// tenant of a HandleTurn, the same id as its tenant_id (see connector.proto).
const TenantMetadataKey = "a2ac-tenant-id"
