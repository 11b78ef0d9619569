// FedBatch: a batch as a task reads it. The host batch gives the shapes, the
// size and the valid rows; when DeviceFeeder has copied it to the model's
// device, `device_fields` holds each field there as it travelled (u8 pixels
// stay u8 and are normalised on the device). Without device fields the host
// bytes are the data: the CPU path, and evaluation.
#pragma once
#include <string>
#include <vector>

#include "core/batch_source.h"
#include "core/tensor.h"

namespace strata {

struct FedBatch {
  // A host batch is a fed batch without device copies (implicit on purpose).
  FedBatch(const HostBatch& b) : host(&b) {}  // NOLINT(google-explicit-constructor)
  FedBatch(const HostBatch& b, const std::vector<Tensor>& fields) : host(&b), device_fields(&fields) {}

  const HostBatch* host;
  const std::vector<Tensor>* device_fields = nullptr;  // one per host->fields entry, same order

  // The named field's device copy (shape = the host field's), or null when fed from the host.
  const Tensor* device_field(const std::string& name) const {
    if (!device_fields) return nullptr;
    for (size_t i = 0; i < host->fields.size(); ++i)
      if (host->fields[i].name == name) return &(*device_fields)[i];
    throw Error("batch has no field '" + name + "'");
  }
};

}  // namespace strata
