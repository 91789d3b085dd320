// Package markdown renders the views of a plan that go to a forge or into
// git: the pull request's body (which --output markdown prints too), with
// its charts, costs and the hidden line of the values it proposed; the
// titles; the dashboard issue; the note of a pull request the job closes;
// and the commit message. Text from the cluster or the repository is made
// inert wherever it shows. It reads a plan and writes text, nothing else.
package markdown
