// The Python module `auxstore._auxstore` over the C ABI (include/auxstore/c.h):
// what its translation units share. docs/python.md has the rules.
//
// Every handle (Store, Backend, State, Pipeline, RestoreHandle) is a C++
// object held by std::shared_ptr (Python's reference and the children that
// need it alive). A handle is closed explicitly (close(), a `with` block) or
// when its last reference goes; closing a parent closes its children first
// (restore handles, then pipelines, then states), so the C ABI's teardown
// order holds whatever order Python drops things in.
//
// The GIL is released around every call into the C ABI. Calls on one handle
// take its lock shared; close takes it exclusively, so a handle is never
// closed under a call in flight. Python objects are only touched with the
// GIL held.
#pragma once

#include "args.h"
#include "buffers.h"
#include "errors.h"
#include "handles.h"

namespace auxpy {

class Backend;
using BackendClass = py::class_<Backend, std::shared_ptr<Backend>>;
using PipelineClass = py::class_<Pipeline, std::shared_ptr<Pipeline>>;

void RegisterStore(py::module_& m);   // store_bind.cc (and store_*.cc, functions.cc)
void RegisterDevice(py::module_& m);  // backend.cc
void RegisterStates(py::module_& m, BackendClass& backend);          // state.cc
void RegisterPipeline(py::module_& m);                               // pipeline_bind.cc
void RegisterRestores(PipelineClass& pipeline);                      // restore_bind.cc
void RegisterRestoreHandle(py::module_& m);                          // restore_bind.cc
void RegisterRestoreBatch(py::module_& m, PipelineClass& pipeline);  // restore_batch_bind.cc
void RegisterIntrospection(py::module_& m);                          // introspection.cc

}  // namespace auxpy
