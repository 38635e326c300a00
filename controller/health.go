package controller

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vectorflow-dev/vectorflow/source"
)

// namedProblems is how many configuration problems a health message names
// before it only counts the rest: validate lists them all.
const namedProblems = 3

// PassProblem says why a pass could not do its work, or "" when it did. A
// pass that failed could not: the config repository or its state branch
// could not be read or did not verify, or a write did not go through. Nor
// could one whose snapshot has configuration problems (what validate
// rejects: an object that does not decode, a reference that does not
// resolve, a landscape repository that cannot be read), since the configs
// they touch are not reconciled. Promotions waiting for an approval are work
// done: waiting is their state, not a fault.
func PassProblem(res PassResult, err error) string {
	if err != nil {
		return "pass failed: " + source.RedactText(err.Error())
	}
	n := len(res.Problems)
	if n == 0 {
		return ""
	}
	named := res.Problems[:min(n, namedProblems)]
	msg := fmt.Sprintf("%d configuration problem(s), listed by vectorflow validate: %s", n, strings.Join(named, "; "))
	if n > len(named) {
		msg += fmt.Sprintf("; and %d more", n-len(named))
	}
	return source.RedactText(msg)
}

// repositoryHealth is what a Runner knows about one repository's last pass.
type repositoryHealth struct {
	Repository string
	// Passed is true once a pass has completed, failed or not.
	Passed bool
	// Problem is PassProblem of the last pass.
	Problem string
}

// readiness is nil when every repository's last pass did its work, and
// otherwise names each repository that is not ready and why. Before its
// first pass a repository is not ready: nothing is known about it yet.
func readiness(health []repositoryHealth) error {
	var reasons []string
	for _, h := range health {
		switch {
		case !h.Passed:
			reasons = append(reasons, fmt.Sprintf("repository %s: first pass not done yet", h.Repository))
		case h.Problem != "":
			reasons = append(reasons, fmt.Sprintf("repository %s: %s", h.Repository, h.Problem))
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	return errors.New(strings.Join(reasons, "\n"))
}
