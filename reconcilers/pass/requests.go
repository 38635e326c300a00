package pass

import (
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// RequestVerdict is what the signature check of one request file found.
type RequestVerdict struct {
	// Path is the request's file; it is deleted whatever the verdict.
	Path    string
	Request reconcilers.PromotionRequest
	// Requester is the approver whose key signed the adding commit; empty
	// when the request is refused.
	Requester string
	// Refusal says why the request does not count.
	Refusal string
}
