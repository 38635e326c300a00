package reconcilers

import (
	"bytes"
	"fmt"
	"iter"
	"maps"
	"path"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/internal/parallel"
	"github.com/vectorflow-dev/vectorflow/internal/readonly"
)

// The state branch's files, encoded and decoded without I/O: the core
// decides over a State and returns the next one; the shell (controller)
// reads the files from git and commits what Changes returns.

// Directories of the state branch, one per kind, one YAML file per object,
// so `git log -- promotions/dev-to-test/` is that config's promotion history.
const (
	VectorsDir    = "vectors"
	PromotionsDir = "promotions"
	ConfigsDir    = "configs"
	TemplatesDir  = "templates"
	StagesDir     = "stages"
	ApprovalsDir  = "approvals"
	// StageVersionsDir holds stageversions/<landscape>/<stage>/<name>.yaml;
	// UsagesDir usages/<name>.yaml, the stages' own and the declared ones.
	StageVersionsDir = "stageversions"
	UsagesDir        = "usages"
	// RequestsDir holds promotion requests (requests/<config>/<id>.yaml),
	// added by approvers and consumed by the controller.
	RequestsDir = "requests"
)

// ApprovalKind is the kind of an approval file, written by `vectorflow
// approve` in a commit signed with the approver's own key.
const ApprovalKind = "Approval"

// Approval is the content of one approval file,
// approvals/<promotion>/<key-id>-<unique>.yaml (or the older
// approvals/<promotion>.yaml). Who approved is decided by the signature of
// the commit that added the file, not by ApprovedBy, which is only what the
// approver called themselves.
type Approval struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Promotion  string      `json:"promotion"`
	Vector     string      `json:"vector"`
	ApprovedBy string      `json:"approvedBy,omitempty"`
	ApprovedAt metav1.Time `json:"approvedAt"`
	// Removes are the protected objects the approver was told the
	// promotion removes (its status.removesProtected), so the signed
	// approval names them.
	Removes []string `json:"removes,omitempty"`

	// Problem says why the file is not an approval (it does not decode, or
	// is of another kind); such a file is refused on its own and never
	// stops the rest of the state from being read.
	Problem string `json:"-"`
}

// PromotionRequestKind is the kind of a promotion request file, which
// `vectorflow promote` adds to the state branch in a commit signed with an
// approver's own key. Only the controller creates promotions: it turns a
// request whose adding commit an approver of that config signed into a
// fresh promotion, and deletes every request in the same state commit, so
// each counts once.
const PromotionRequestKind = "PromotionRequest"

// PromotionRequest is the content of requests/<config>/<id>.yaml. Who asked
// is decided by the signature of the commit that added the file, not by
// RequestedBy, which is only what the requester called themselves.
type PromotionRequest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Config     string `json:"config"`
	// Vector is the source's vector the requester saw; when set, the
	// request is refused if the source offers another one by the time the
	// controller reads it.
	Vector string `json:"vector,omitempty"`
	// PromoteVector asks for that existing vector rather than the
	// source's current one (promote --vector, rollback).
	PromoteVector string `json:"promoteVector,omitempty"`
	// Force lets the promotion go down across a stepping stone (--force).
	Force bool `json:"force,omitempty"`
	// Rollback marks a rollback (vectorflow rollback): the controller also
	// holds the stage, with Reason.
	Rollback bool `json:"rollback,omitempty"`
	// Reason is the requester's why, for a rollback's hold.
	Reason      string      `json:"reason,omitempty"`
	RequestedBy string      `json:"requestedBy,omitempty"`
	RequestedAt metav1.Time `json:"requestedAt"`
}

// RequestPath is where a promotion request lives on the state branch.
func RequestPath(config, id string) string {
	return path.Join(RequestsDir, config, id+".yaml")
}

// State is every runtime object on the state branch at one commit.
type State struct {
	// Vectors by reference (`<template>:<version>`).
	Vectors map[string]*v1alpha1.Vector
	// Promotions by name.
	Promotions map[string]*v1alpha1.VectorPromotion
	// Configs, Templates: status only (the spec lives in the config
	// repository), by name.
	Configs   map[string]*v1alpha1.VectorPromotionConfig
	Templates map[string]*v1alpha1.VectorTemplate
	// Stages by `<landscape>/<name>`, status only.
	Stages map[string]*v1alpha1.Stage
	// Approvals by file path, as approvers wrote them: each approver's
	// approval is a file of its own (see ApprovalFiles).
	Approvals map[string]*Approval
	// StageVersions and Usages (StageVersionUsages) by name.
	StageVersions map[string]*v1alpha1.StageVersion
	Usages        map[string]*v1alpha1.StageVersionUsage
}

// NewState returns an empty state.
func NewState() *State { return newStateSized(stateSizes{}) }

// stateSizes count a state's objects of each kind.
type stateSizes struct {
	vectors, promotions, configs, templates, stages, approvals, stageVersions, usages int
}

func (s *State) sizes() stateSizes {
	return stateSizes{len(s.Vectors), len(s.Promotions), len(s.Configs), len(s.Templates),
		len(s.Stages), len(s.Approvals), len(s.StageVersions), len(s.Usages)}
}

// newStateSized is an empty state whose maps have room for n objects: a
// state of 10,000 stages is 50,000 objects, and maps grown one insert at a
// time rehash them all several times.
func newStateSized(n stateSizes) *State {
	return &State{
		Vectors:    make(map[string]*v1alpha1.Vector, n.vectors),
		Promotions: make(map[string]*v1alpha1.VectorPromotion, n.promotions),
		Configs:    make(map[string]*v1alpha1.VectorPromotionConfig, n.configs),
		Templates:  make(map[string]*v1alpha1.VectorTemplate, n.templates),
		Stages:     make(map[string]*v1alpha1.Stage, n.stages),
		Approvals:  make(map[string]*Approval, n.approvals),

		StageVersions: make(map[string]*v1alpha1.StageVersion, n.stageVersions),
		Usages:        make(map[string]*v1alpha1.StageVersionUsage, n.usages),
	}
}

// StageKey is how the state names a stage: `<landscape>/<name>`.
func StageKey(landscape, name string) string { return landscape + "/" + name }

// DecodeState reads the files of the state branch. A file that does not
// decode is reported and skipped, so one bad file cannot hide the rest.
func DecodeState(files map[string][]byte) (*State, []error) {
	return NewCodec().Decode(files)
}

// EncodeState renders the state as the files of the state branch.
func EncodeState(s *State) (map[string][]byte, error) {
	return NewCodec().Encode(s)
}

// Codec reads and writes the state branch's files. It remembers each file's
// bytes and the object they decode to, so an unchanged file is not decoded
// again and an unchanged object is not encoded again: over a large state
// branch the YAML codec, not deciding, is what a pass would spend its time on.
type Codec struct {
	known map[string]codecEntry
	// changed says a file was decoded or encoded since the last Export.
	changed bool
	// exported are the entries the last Export wrote (or Import read),
	// each checked to give its object back: the next Export checks only
	// the files whose bytes changed.
	exported map[string]memoEntry
	// leftOut are the files the last Export left out, by their bytes then.
	leftOut map[string][]byte
	// encodes counts the objects encoded, exportChecks those Export
	// checked and handedChanges the Changes found from a handout, for
	// tests.
	encodes, exportChecks, handedChanges int
	// shares says Decode hands out the objects it remembers, not copies
	// (NewSharingCodec); pristine, in a test binary, holds a copy of each
	// to check it against.
	shares   bool
	pristine map[string]pristineObject
	// names are the files the last Decode read, in order; decoded counts
	// the objects it returned, the room the next is made with.
	names   []string
	decoded stateSizes
	// handedOut is what the last Decode of a sharing codec handed out, for
	// Changes on the same files.
	handedOut *handout
}

// handout is what a sharing codec's Decode handed out. Changes on the
// files it read passes over each object that is still the one handed out
// under its key and that Encode writes as that file's bytes (asFile), as
// encode's comparison finds it without a look inside: looking up each of
// a state's 40,000 objects by its path took 30 ms a pass at 10,000 stages.
type handout struct {
	state *State
	files map[string][]byte
	// count is how many files files held, stateFiles how many of them
	// are state files.
	count, stateFiles int
	// notAsFile are the objects handed out that encode compares (mostly
	// none: a file of an older version, or at another path).
	notAsFile map[runtimeObject]bool
}

// pristineObject is a copy of the object of a file, taken when the codec
// handed it out to be read only.
type pristineObject struct {
	of, copy runtimeObject
}

type codecEntry struct {
	data []byte
	obj  runtimeObject
	// decoded is true when obj is what data decodes to (decodeFile ran on
	// it, now or in the process that exported it), not an object Encode
	// wrote, which Export decodes first.
	decoded bool
	// same is the last object found to encode to exactly data although
	// not equal to obj (a time in another zone, say): the next pass that
	// holds it again need not encode it to know.
	same runtimeObject
	// isView says obj is what Encode writes of it, once viewChecked
	// (asHandedOut).
	viewChecked, isView bool
	// asFile says Encode writes obj, handed out, as data at this path,
	// once asFileChecked (Codec.asFile).
	asFileChecked, asFile bool
}

// runtimeObject is what the state branch holds: API objects and approvals.
type runtimeObject interface {
	deepCopy() runtimeObject
	// value is what the file holds.
	value() any
}

type (
	vectorObject    struct{ *v1alpha1.Vector }
	promotionObject struct{ *v1alpha1.VectorPromotion }
	configObject    struct {
		*v1alpha1.VectorPromotionConfig
	}
	templateObject     struct{ *v1alpha1.VectorTemplate }
	stageObject        struct{ *v1alpha1.Stage }
	approvalObject     struct{ *Approval }
	stageVersionObject struct{ *v1alpha1.StageVersion }
	usageObject        struct {
		*v1alpha1.StageVersionUsage
	}
)

func (o vectorObject) deepCopy() runtimeObject    { return vectorObject{o.DeepCopy()} }
func (o promotionObject) deepCopy() runtimeObject { return promotionObject{o.DeepCopy()} }
func (o configObject) deepCopy() runtimeObject    { return configObject{o.DeepCopy()} }
func (o templateObject) deepCopy() runtimeObject  { return templateObject{o.DeepCopy()} }
func (o stageObject) deepCopy() runtimeObject     { return stageObject{o.DeepCopy()} }
func (o approvalObject) deepCopy() runtimeObject  { a := *o.Approval; return approvalObject{&a} }
func (o stageVersionObject) deepCopy() runtimeObject {
	return stageVersionObject{o.StageVersion.DeepCopy()}
}
func (o usageObject) deepCopy() runtimeObject { return usageObject{o.StageVersionUsage.DeepCopy()} }

func (o vectorObject) value() any    { return o.Vector }
func (o promotionObject) value() any { return o.VectorPromotion }
func (o configObject) value() any    { return o.VectorPromotionConfig }
func (o templateObject) value() any  { return o.VectorTemplate }
func (o stageObject) value() any     { return o.Stage }
func (o approvalObject) value() any  { return o.Approval }
func (o stageVersionObject) value() any {
	return o.StageVersion
}
func (o usageObject) value() any { return o.StageVersionUsage }

// NewCodec returns a codec with nothing remembered.
func NewCodec() *Codec { return &Codec{known: map[string]codecEntry{}} }

// NewSharingCodec returns a codec whose Decode hands out the objects it
// remembers instead of copies of them (copying 20,000 objects was half of a
// decode at 10,000 stages): its caller, and whatever that hands them to,
// only ever reads them, and the State's maps (Changes finds what changed
// against them); Decide copies what it changes. In a test binary
// (readonly.Checked) the next Decode or Encode panics, naming the file, when
// one was changed.
func NewSharingCodec() *Codec {
	c := &Codec{known: map[string]codecEntry{}, shares: true}
	if readonly.Checked() {
		c.pristine = map[string]pristineObject{}
	}
	return c
}

// checkShared panics when an object Decode handed out was changed since.
func (c *Codec) checkShared() {
	for name, p := range c.pristine {
		if e, ok := c.known[name]; ok && e.obj == p.of && !reflect.DeepEqual(p.of, p.copy) {
			panic(fmt.Sprintf("reconcilers: the object of state file %s was changed after Decode handed it out to be read only", name))
		}
	}
}

// Decode reads the files of the state branch; see DecodeState.
func (c *Codec) Decode(files map[string][]byte) (*State, []error) {
	c.checkShared()
	s := newStateSized(c.decoded)
	var errs []error
	// The codec's memory is changed in place: a pass that changed a few of
	// the branch's 40,000 files (10,000 stages) changes a few entries, where
	// making it anew, and sorting the names again, took longer than the
	// decode itself.
	c.names = keys.SortedLike(files, c.names)
	var h *handout
	if c.shares {
		h = &handout{state: s, files: files, count: len(files)}
	}
	c.handedOut = h
	known := 0
	for _, name := range c.names {
		data := files[name]
		entry, ok := c.known[name]
		switch {
		case ok && bytes.Equal(entry.data, data):
			if len(data) > 0 && &entry.data[0] != &data[0] {
				// The branch's bytes from now on: the next pass, and the
				// state commit's comparison, find them the same at once.
				entry.data = data
				c.known[name] = entry
			}
		default:
			obj, err := decodeFile(name, data)
			if err != nil {
				errs = append(errs, fmt.Errorf("state file %s: %w", name, err))
			}
			if obj == nil {
				delete(c.known, name)
				if h != nil && isStateFile(name) {
					h.stateFiles++
				}
				continue
			}
			entry = codecEntry{data: data, obj: obj, decoded: true}
			c.known[name] = entry
			c.changed = true
		}
		known++
		if !c.shares {
			s.add(name, entry.obj.deepCopy())
			continue
		}
		s.add(name, entry.obj)
		h.add(c.asFile(name, entry), entry.obj)
		if c.pristine != nil && c.pristine[name].of != entry.obj {
			c.pristine[name] = pristineObject{of: entry.obj, copy: entry.obj.deepCopy()}
		}
	}
	if len(c.known) > known {
		// Files the branch no longer holds are forgotten.
		for name := range c.known {
			if _, ok := files[name]; !ok {
				delete(c.known, name)
			}
		}
	}
	for name := range c.pristine {
		if _, ok := c.known[name]; !ok {
			delete(c.pristine, name)
		}
	}
	c.decoded = s.sizes()
	return s, errs
}

// decodeFile decodes one file by its directory; nil for files that are not
// runtime objects.
func decodeFile(name string, data []byte) (runtimeObject, error) {
	if path.Ext(name) != ".yaml" {
		return nil, nil
	}
	obj := newRuntimeObject(name)
	if obj == nil {
		return nil, nil
	}
	err := yaml.UnmarshalStrict(data, obj.value())
	if a, ok := obj.(approvalObject); ok {
		// Anyone may add a file under approvals/: a bad one is kept with
		// its problem, to be refused on its own, not reported as a broken
		// state branch.
		switch {
		case err != nil:
			return approvalObject{&Approval{Problem: err.Error()}}, nil
		case a.Kind != ApprovalKind || a.Promotion == "":
			return approvalObject{&Approval{Problem: fmt.Sprintf("it is not an %s naming a promotion (kind %q)", ApprovalKind, a.Kind)}}, nil
		}
		return a, nil
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// newRuntimeObject is an empty object of the kind a file's directory
// holds; nil for files that are not runtime objects.
func newRuntimeObject(name string) runtimeObject {
	dir, _, _ := strings.Cut(name, "/")
	switch dir {
	case VectorsDir:
		return vectorObject{&v1alpha1.Vector{}}
	case PromotionsDir:
		return promotionObject{&v1alpha1.VectorPromotion{}}
	case ConfigsDir:
		return configObject{&v1alpha1.VectorPromotionConfig{}}
	case TemplatesDir:
		return templateObject{&v1alpha1.VectorTemplate{}}
	case StagesDir:
		return stageObject{&v1alpha1.Stage{}}
	case ApprovalsDir:
		return approvalObject{&Approval{}}
	case StageVersionsDir:
		return stageVersionObject{&v1alpha1.StageVersion{}}
	case UsagesDir:
		return usageObject{&v1alpha1.StageVersionUsage{}}
	}
	return nil
}

// add puts a decoded object into the state's map for its kind.
func (s *State) add(name string, obj runtimeObject) {
	switch o := obj.(type) {
	case approvalObject:
		s.Approvals[name] = o.Approval
	case vectorObject:
		s.Vectors[o.Ref()] = o.Vector
	case promotionObject:
		s.Promotions[o.Name] = o.VectorPromotion
	case configObject:
		s.Configs[o.Name] = o.VectorPromotionConfig
	case templateObject:
		s.Templates[o.Name] = o.VectorTemplate
	case stageObject:
		s.Stages[StageKey(o.Spec.Landscape, o.Name)] = o.Stage
	case stageVersionObject:
		s.StageVersions[o.Name] = o.StageVersion
	case usageObject:
		s.Usages[o.Name] = o.StageVersionUsage
	}
}

// Encode renders the state as the files of the state branch; an object
// equal to the one a file decoded to keeps that file's bytes, so only the
// objects that changed are encoded. Both the comparisons and the encoding
// run on every core.
func (c *Codec) Encode(s *State) (map[string][]byte, error) {
	encoded, err := c.encode(s)
	if err != nil {
		return nil, err
	}
	files := make(map[string][]byte, len(encoded))
	for _, e := range encoded {
		files[e.path] = e.data
	}
	return files, nil
}

// Changes is what a state commit writes on a branch holding files so that
// it holds s: StateDiff(files, Encode(s)), found without the whole branch's
// files in a map. The objects' paths are distinct, as the state's keys are.
func (c *Codec) Changes(s *State, files map[string][]byte) (map[string][]byte, error) {
	if h := c.handedOut; h != nil && sameMap(h.files, files) && len(files) == h.count {
		diff, whole, err := c.changesSince(h, s)
		if err != nil || whole {
			return c.changes(s, files)
		}
		c.handedChanges++
		if c.pristine != nil {
			// A test binary checks it against the whole comparison.
			if all, err := c.changes(s, files); err == nil && !reflect.DeepEqual(diff, all) {
				panic(fmt.Sprintf("reconcilers: Changes from what Decode handed out writes %v, the whole comparison %v", keys.Sorted(diff), keys.Sorted(all)))
			}
		}
		return diff, nil
	}
	return c.changes(s, files)
}

// changes is Changes comparing every object of s with the file at its
// path.
func (c *Codec) changes(s *State, files map[string][]byte) (map[string][]byte, error) {
	encoded, err := c.encode(s)
	if err != nil {
		return nil, err
	}
	return diffFiles(files, encodedFiles(encoded)), nil
}

// encodedFiles yields each encoding's path and bytes.
func encodedFiles(encoded []encoding) iter.Seq2[string, []byte] {
	return func(yield func(string, []byte) bool) {
		for _, e := range encoded {
			if !yield(e.path, e.data) {
				return
			}
		}
	}
}

// encode is each object of s with its file's bytes: the codec's, or
// encoded anew for an object that changed.
func (c *Codec) encode(s *State) ([]encoding, error) {
	c.checkShared()
	considered := make([]encoding, 0, len(s.Vectors)+len(s.Promotions)+len(s.Configs)+len(s.Templates)+
		len(s.Stages)+len(s.StageVersions)+len(s.Usages)+len(s.Approvals))
	// consider lists an object to compare with the file the codec knows;
	// own says obj is a copy already (Decide leaves most objects as it
	// found them, and copying every object of a large state branch to
	// compare it cost more than the comparison).
	consider := func(p string, obj runtimeObject, own bool) {
		considered = append(considered, encoding{path: p, obj: obj, own: own})
	}
	for _, v := range s.Vectors {
		obj, own := runtimeObject(vectorObject{v}), false
		if tm := typeMeta(v1alpha1.VectorKind); v.TypeMeta != tm {
			out := v.DeepCopy()
			out.TypeMeta = tm
			obj, own = vectorObject{out}, true
		}
		consider(VectorPath(v.Spec.Template, v.Spec.Version), obj, own)
	}
	for _, p := range s.Promotions {
		obj, own := runtimeObject(promotionObject{p}), false
		if tm := typeMeta(v1alpha1.VectorPromotionKind); p.TypeMeta != tm {
			out := p.DeepCopy()
			out.TypeMeta = tm
			obj, own = promotionObject{out}, true
		}
		consider(PromotionPath(p.Spec.VectorPromotionConfigName, p.Name), obj, own)
	}
	// Configs, templates and stages are written as their name and status
	// (and a stage's spec): each is compared as a shallow view of the
	// state's object, copied only to be encoded.
	for name, cfg := range s.Configs {
		p := ConfigPath(name)
		consider(p, c.asHandedOut(p, configObject{cfg}, func() runtimeObject { return configView(name, cfg) }), false)
	}
	for name, t := range s.Templates {
		consider(path.Join(TemplatesDir, name+".yaml"), templateObject{&v1alpha1.VectorTemplate{
			TypeMeta: typeMeta(v1alpha1.VectorTemplateKind), ObjectMeta: metav1.ObjectMeta{Name: name}, Status: t.Status}}, false)
	}
	for _, st := range s.Stages {
		p := StagePath(st.Spec.Landscape, st.Name)
		consider(p, c.asHandedOut(p, stageObject{st}, func() runtimeObject { return stageView(st) }), false)
	}
	for _, sv := range s.StageVersions {
		obj, own := runtimeObject(stageVersionObject{sv}), false
		if tm := typeMeta(v1alpha1.StageVersionKind); sv.TypeMeta != tm {
			out := sv.DeepCopy()
			out.TypeMeta = tm
			obj, own = stageVersionObject{out}, true
		}
		consider(StageVersionPath(sv.Spec.Landscape, sv.Spec.Stage, sv.Name), obj, own)
	}
	for _, u := range s.Usages {
		obj, own := runtimeObject(usageObject{u}), false
		if tm := typeMeta(v1alpha1.StageVersionUsageKind); u.TypeMeta != tm {
			out := u.DeepCopy()
			out.TypeMeta = tm
			obj, own = usageObject{out}, true
		}
		consider(UsagePath(u.Name), obj, own)
	}
	for p, a := range s.Approvals {
		if a.Problem != "" {
			continue // not ours to write; StateDiff leaves approvals/ alone anyway
		}
		consider(p, approvalObject{a}, false)
	}
	kept := c.keptFiles(considered)
	var changed []int
	for i := range considered {
		e := &considered[i]
		if kept[i].ok {
			e.data = kept[i].data
			continue
		}
		if !e.own {
			e.obj = e.obj.deepCopy() // the codec keeps what it encodes
		}
		changed = append(changed, i)
	}
	if err := encodeAll(considered, changed); err != nil {
		return nil, err
	}
	c.encodes += len(changed)
	for _, i := range changed {
		e := &considered[i]
		if entry, ok := c.known[e.path]; ok && bytes.Equal(entry.data, e.data) {
			// Equal only up to what the file holds (a time's location, say):
			// the file, and what it decodes to, stay as they are.
			e.data = entry.data
			entry.same = e.obj
			c.known[e.path] = entry
			continue
		}
		c.known[e.path] = codecEntry{data: e.data, obj: e.obj}
		c.changed = true
	}
	return considered, nil
}

// keptFile is the file the codec knows for an object's path, when ok says
// the object is (or encodes to exactly) what that file holds.
type keptFile struct {
	data []byte
	ok   bool
}

// asHandedOut is obj when it is the very object the codec handed out for
// file p (NewSharingCodec; Decide keeps an unchanged config's and stage's)
// and it is its own view, what Encode writes of it: keptFiles then knows
// the file unchanged by comparing pointers, not 10,000 statuses field by
// field each pass (for stages, 8 ms instead of 21 at 10,000). Otherwise it is view(). Whether an object is its own view is found
// once per object.
func (c *Codec) asHandedOut(p string, obj runtimeObject, view func() runtimeObject) runtimeObject {
	e, ok := c.known[p]
	if !ok || e.obj != obj {
		return view()
	}
	if !e.viewChecked {
		e.viewChecked, e.isView = true, reflect.DeepEqual(obj, view())
		c.known[p] = e
	}
	if e.isView {
		return obj
	}
	return view()
}

// changesSince is Changes on the files of handout h: an object of s still
// handed out under its key as its file is that file unchanged, and only
// the others are compared. whole says a file of h no longer holds an
// object of s (a promotion collected, a file at the wrong path, one that
// did not decode): the whole comparison finds which.
func (c *Codec) changesSince(h *handout, s *State) (diff map[string][]byte, whole bool, err error) {
	rest := NewState()
	// kept counts the state files of h.files that s holds as they are.
	kept := passOver(h, s.Promotions, h.state.Promotions, rest.Promotions, func(p *v1alpha1.VectorPromotion) runtimeObject { return promotionObject{p} }) +
		passOver(h, s.Configs, h.state.Configs, rest.Configs, func(c *v1alpha1.VectorPromotionConfig) runtimeObject { return configObject{c} }) +
		passOver(h, s.Stages, h.state.Stages, rest.Stages, func(st *v1alpha1.Stage) runtimeObject { return stageObject{st} }) +
		passOver(h, s.StageVersions, h.state.StageVersions, rest.StageVersions, func(sv *v1alpha1.StageVersion) runtimeObject { return stageVersionObject{sv} }) +
		passOver(h, s.Usages, h.state.Usages, rest.Usages, func(u *v1alpha1.StageVersionUsage) runtimeObject { return usageObject{u} })
	// Decide copies these (CloneSharing): they are compared.
	maps.Copy(rest.Vectors, s.Vectors)
	maps.Copy(rest.Templates, s.Templates)
	maps.Copy(rest.Approvals, s.Approvals)
	encoded, err := c.encode(rest)
	if err != nil {
		return nil, false, err
	}
	diff, keptEncoded := changedFiles(h.files, encodedFiles(encoded))
	return diff, kept+keptEncoded != h.stateFiles, nil
}

// passOver puts into rest each of objects that is not the very object
// handed out under its key as its file, and counts the others.
func passOver[T any](h *handout, objects, handed, rest map[string]*T, wrap func(*T) runtimeObject) (kept int) {
	for k, obj := range objects {
		if was, ok := handed[k]; ok && was == obj && (len(h.notAsFile) == 0 || !h.notAsFile[wrap(obj)]) {
			kept++
			continue
		}
		rest[k] = obj
	}
	return kept
}

// add counts an object Decode handed out, and notes one that Changes
// would pass over for being handed out but encode compares.
func (h *handout) add(asFile bool, obj runtimeObject) {
	if h == nil {
		return
	}
	switch obj.(type) {
	case approvalObject: // a record, not a state file
		return
	case promotionObject, configObject, stageObject, stageVersionObject, usageObject:
		if !asFile {
			if h.notAsFile == nil {
				h.notAsFile = map[runtimeObject]bool{}
			}
			h.notAsFile[obj] = true
		}
	}
	h.stateFiles++
}

// asFile says whether encode finds the object of the entry of file p, handed
// out, to be that file without a look inside: its kind and apiVersion as
// Encode sets them, p the path Encode gives it, and a config or a stage
// what Encode writes of it (asHandedOut). Vectors, templates and approvals
// are copied by Decide and always compared. Found once per entry.
func (c *Codec) asFile(p string, entry codecEntry) bool {
	if entry.asFileChecked {
		return entry.asFile
	}
	ok := false
	switch o := entry.obj.(type) {
	case promotionObject:
		ok = o.TypeMeta == typeMeta(v1alpha1.VectorPromotionKind) && PromotionPath(o.Spec.VectorPromotionConfigName, o.Name) == p
	case configObject:
		ok = ConfigPath(o.Name) == p && c.asHandedOut(p, o, func() runtimeObject { return configView(o.Name, o.VectorPromotionConfig) }) == entry.obj
	case stageObject:
		ok = StagePath(o.Stage.Spec.Landscape, o.Stage.Name) == p && c.asHandedOut(p, o, func() runtimeObject { return stageView(o.Stage) }) == entry.obj
	case stageVersionObject:
		ok = o.TypeMeta == typeMeta(v1alpha1.StageVersionKind) && StageVersionPath(o.Spec.Landscape, o.Spec.Stage, o.Name) == p
	case usageObject:
		ok = o.TypeMeta == typeMeta(v1alpha1.StageVersionUsageKind) && UsagePath(o.Name) == p
	}
	entry = c.known[p] // asHandedOut may have noted the view
	entry.asFileChecked, entry.asFile = true, ok
	c.known[p] = entry
	return ok
}

// typeMeta is the kind and apiVersion Encode writes of an object.
func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: kind}
}

// ConfigPath and StagePath are where a config's and a stage's status live
// on the state branch; configView and stageView are what Encode writes of
// them: their name and status (and a stage's spec).
func ConfigPath(name string) string { return path.Join(ConfigsDir, name+".yaml") }

func StagePath(landscape, name string) string {
	return path.Join(StagesDir, landscape, name+".yaml")
}

func configView(name string, cfg *v1alpha1.VectorPromotionConfig) runtimeObject {
	return configObject{&v1alpha1.VectorPromotionConfig{
		TypeMeta: typeMeta(v1alpha1.VectorPromotionConfigKind), ObjectMeta: metav1.ObjectMeta{Name: name}, Status: cfg.Status}}
}

func stageView(st *v1alpha1.Stage) runtimeObject {
	return stageObject{&v1alpha1.Stage{
		TypeMeta: typeMeta(v1alpha1.StageKind), ObjectMeta: metav1.ObjectMeta{Name: st.Name}, Spec: st.Spec, Status: st.Status}}
}

// sameMap says a and b are the same map, not two maps that hold the same.
func sameMap(a, b map[string][]byte) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// keptFiles is each object's keptFile. It only reads the codec, so it
// compares on every core: every pass compares every object of the state
// branch (15 ms for 1,700 files on one core). The objects are not kept:
// they may be the caller's.
func (c *Codec) keptFiles(objects []encoding) []keptFile {
	kept := make([]keptFile, len(objects))
	parallel.Each(len(objects), func(i int) {
		entry, ok := c.known[objects[i].path]
		obj := objects[i].obj
		// The very object the codec handed out (NewSharingCodec), which no
		// caller changes, is unchanged without a look inside.
		if ok && (entry.obj == obj || reflect.DeepEqual(entry.obj, obj) || entry.same != nil && reflect.DeepEqual(entry.same, obj)) {
			kept[i] = keptFile{data: entry.data, ok: true}
		}
	})
	return kept
}

// encoding is one object Encode considers; one it writes anew is a copy
// made for it (own), which the codec then keeps.
type encoding struct {
	path string
	obj  runtimeObject
	own  bool
	data []byte
}

// encodeAll marshals the file of each object of all that todo lists,
// spread over the cores: a cold pass over a large repository writes tens
// of thousands.
func encodeAll(all []encoding, todo []int) error {
	errs := make([]error, len(todo))
	parallel.Each(len(todo), func(i int) {
		e := &all[todo[i]]
		data, err := marshalYAML(e.obj.value())
		if err != nil {
			errs[i] = fmt.Errorf("encode %s: %w", e.path, err)
			return
		}
		e.data = data
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// VectorPath is where a vector lives on the state branch.
func VectorPath(template, version string) string {
	return path.Join(VectorsDir, template, version+".yaml")
}

// StageVersionPath is where a StageVersion lives on the state branch.
func StageVersionPath(landscape, stage, name string) string {
	return path.Join(StageVersionsDir, landscape, stage, name+".yaml")
}

// UsagePath is where a StageVersionUsage lives on the state branch.
func UsagePath(name string) string { return path.Join(UsagesDir, name+".yaml") }

// PromotionPath is where a promotion lives on the state branch.
func PromotionPath(config, name string) string {
	return path.Join(PromotionsDir, config, name+".yaml")
}

// LegacyApprovalPath is where approvals were written before each approver
// had a file of their own; such a file is still read.
func LegacyApprovalPath(promotion string) string {
	return path.Join(ApprovalsDir, promotion+".yaml")
}

// ApprovalDir holds the approval files of a promotion, one per approval.
func ApprovalDir(promotion string) string {
	return path.Join(ApprovalsDir, promotion)
}

// ApprovalPromotion is the promotion whose approval file p is, by where it
// lies: approvals/<promotion>/<file>.yaml or approvals/<promotion>.yaml.
// ok is false for any other path under approvals/ (a stray file).
func ApprovalPromotion(p string) (promotion string, ok bool) {
	rest, found := strings.CutPrefix(p, ApprovalsDir+"/")
	if !found || path.Ext(rest) != ".yaml" {
		return "", false
	}
	dir, file, nested := strings.Cut(rest, "/")
	switch {
	case !nested:
		return strings.TrimSuffix(rest, ".yaml"), strings.TrimSuffix(rest, ".yaml") != ""
	case dir == "" || strings.Contains(file, "/") || file == ".yaml":
		return "", false
	}
	return dir, true
}

// StateDiff is the compare-and-swap payload that turns the files before into
// the files after: changed and new files with their content, removed files
// with nil. Approval files are the approvers' signed words: the controller
// never writes, rewrites or removes one. Promotion requests are not state
// objects: the controller deletes each one it consumed (Decision's
// ConsumedRequests), never one it has not read.
func StateDiff(before, after map[string][]byte) map[string][]byte {
	return diffFiles(before, maps.All(after))
}

// diffFiles is StateDiff of before and the files after yields, each path
// once (after is walked twice at most). A file of before that after lacks
// is looked for only when one exists: before's state files are counted,
// and only a count the files after keeps does not reach is looked for (at
// 10,000 stages a second look at each of 40,000 files cost more than
// finding the few that changed).
func diffFiles(before map[string][]byte, after iter.Seq2[string, []byte]) map[string][]byte {
	diff, kept := changedFiles(before, after)
	stateFiles := 0
	for p := range before {
		if isStateFile(p) {
			stateFiles++
		}
	}
	if stateFiles == kept {
		return diff
	}
	holds := map[string]bool{}
	for p := range after {
		holds[p] = true
	}
	for p := range before {
		if isStateFile(p) && !holds[p] {
			diff[p] = nil
		}
	}
	return diff
}

// changedFiles are the files after yields that before lacks or holds
// otherwise, records left out, and kept counts the state files of before
// that after holds.
func changedFiles(before map[string][]byte, after iter.Seq2[string, []byte]) (diff map[string][]byte, kept int) {
	diff = map[string][]byte{}
	for p, data := range after {
		if IsRecordPath(p) {
			continue
		}
		old, ok := before[p]
		if ok && isStateFile(p) {
			kept++
		}
		if !ok || !bytes.Equal(old, data) {
			diff[p] = data
		}
	}
	return diff, kept
}

// isStateFile says whether a branch file is one the controller writes,
// rewrites and removes: a YAML file that is no record.
func isStateFile(p string) bool { return !IsRecordPath(p) && path.Ext(p) == ".yaml" }

// Clone is a deep copy: what a test keeps to compare with later.
func (s *State) Clone() *State {
	c := s.CloneSharing()
	for k, v := range c.Promotions {
		c.Promotions[k] = v.DeepCopy()
	}
	for k, v := range c.Stages {
		c.Stages[k] = v.DeepCopy()
	}
	for k, v := range c.Configs {
		c.Configs[k] = v.DeepCopy()
	}
	for k, v := range c.StageVersions {
		c.StageVersions[k] = v.DeepCopy()
	}
	for k, v := range c.Usages {
		c.Usages[k] = v.DeepCopy()
	}
	return c
}

// CloneSharing is Clone, except that the promotions, the configs' and the
// stages' statuses, the StageVersions and the usages are s's own: whoever
// changes one replaces it with a changed copy instead (copy on write). A
// decision keeps every promotion and changes few, most of them finished
// long ago, writes every config's status afresh, and changes the stages,
// versions and usages of the few stages that moved; copying them all was a
// fifth of its time, and the codec knows an object it handed out unchanged
// by its pointer (asHandedOut).
func (s *State) CloneSharing() *State {
	c := newStateSized(s.sizes())
	for k, v := range s.Vectors {
		c.Vectors[k] = v.DeepCopy()
	}
	maps.Copy(c.Promotions, s.Promotions)
	maps.Copy(c.Configs, s.Configs)
	for k, v := range s.Templates {
		c.Templates[k] = v.DeepCopy()
	}
	maps.Copy(c.Stages, s.Stages)
	for k, v := range s.Approvals {
		a := *v
		c.Approvals[k] = &a
	}
	maps.Copy(c.StageVersions, s.StageVersions)
	maps.Copy(c.Usages, s.Usages)
	return c
}
