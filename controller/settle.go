package controller

// passesPerHop is how many passes one automatic promotion takes from the
// drift that starts it to the recorded result that lets the next stage
// drift: one starts and executes it, the next records it and starts the
// next hop.
const passesPerHop = 2

// passLimit bounds RunUntilStable: a change travels at most one hop per
// config, so a repository whose last pass saw n configs settles within
// passesPerHop·n passes; extra more are allowed for retries and pull
// requests. A livelock still ends, after a number of passes proportional
// to the repository.
func (c *Controller) passLimit(extra int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return extra + passesPerHop*c.configs
}
