package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateMinApprovals(t *testing.T) {
	keys := newTestKeys(t)
	two := []Approver{{Name: "alice", PublicKey: keys.sshPublic}, {Name: "bob", PublicKey: keys.pgpPublic}}
	path := specPath.Child("approval", "minApprovals")
	tests := []struct {
		name      string
		approvers []Approver
		min       *int32
		want      field.ErrorList
	}{
		{name: "unset", approvers: two},
		{name: "one of two", approvers: two, min: ptr[int32](1)},
		{name: "two of two", approvers: two, min: ptr[int32](2)},
		{name: "three of two", approvers: two, min: ptr[int32](3), want: field.ErrorList{field.Invalid(path, int64(3),
			"must be at most the number of spec.approval.approvers (2), or no promotion can ever be approved; add approvers or lower it")}},
		{name: "zero", approvers: two, min: ptr[int32](0), want: field.ErrorList{field.Invalid(path, int64(0),
			"must be at least 1; to run promotions without approval set spec.approval.required: false")}},
		{name: "negative", approvers: two, min: ptr[int32](-2), want: field.ErrorList{field.Invalid(path, int64(-2),
			"must be at least 1; to run promotions without approval set spec.approval.required: false")}},
		// One fault, one error: the missing approvers, not the count.
		{name: "one without approvers", min: ptr[int32](1), want: field.ErrorList{field.Required(specPath.Child("approval", "approvers"),
			"promotions of this config wait for an approval (spec.approval.required is true, the default for a Stage source) "+
				"that nobody can give: list the approvers (name and publicKey), set spec.approval.pullRequest, or set spec.approval.required: false")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			c.Spec.Approval = &ApprovalPolicy{Approvers: tt.approvers, MinApprovals: tt.min}
			if diff := cmp.Diff(tt.want, c.Validate()); diff != "" {
				t.Errorf("Validate() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequiredApprovals(t *testing.T) {
	for _, tt := range []struct {
		policy *ApprovalPolicy
		want   int
	}{
		{nil, 1},
		{&ApprovalPolicy{}, 1},
		{&ApprovalPolicy{MinApprovals: ptr[int32](2)}, 2},
		{&ApprovalPolicy{MinApprovals: ptr[int32](0)}, 1},
		{&ApprovalPolicy{MinApprovals: ptr[int32](-1)}, 1},
	} {
		if got := tt.policy.RequiredApprovals(); got != tt.want {
			t.Errorf("RequiredApprovals of %+v = %d, want %d", tt.policy, got, tt.want)
		}
	}
}
