// FedBatch: a batch as a task reads it. The host batch gives the shapes, the
// size and the valid rows; when DeviceFeeder has copied it to the model's
// device, `device_fields` holds each field there as it travelled (u8 pixels
// stay u8 and are normalised on the device). Without device fields the host
// bytes are the data: the CPU path, and evaluation. There, a batch with an
// `owner` (DeviceFeeder's host path) lends its bytes to tensors without a copy
// (batch_tensors.h host_field_tensor): each such tensor holds the owner, so the
// bytes live as long as it does.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/batch_source.h"
#include "core/tensor.h"

namespace strata {

struct FedBatch {
  // A host batch is a fed batch without device copies (implicit on purpose).
  FedBatch(const HostBatch& b) : host(&b) {}  // NOLINT(google-explicit-constructor)
  FedBatch(const HostBatch& b, const std::vector<Tensor>& fields) : host(&b), device_fields(&fields) {}
  // A host batch whose bytes tensors may view: `owned` is kept by each of them.
  explicit FedBatch(std::shared_ptr<const HostBatch> owned) : host(owned.get()), owner(std::move(owned)) {}

  const HostBatch* host;
  const std::vector<Tensor>* device_fields = nullptr;  // one per host->fields entry, same order
  std::shared_ptr<const HostBatch> owner;              // *host, when tensors may wrap its bytes

  // The named field's device copy (shape = the host field's), or null when fed from the host.
  const Tensor* device_field(const std::string& name) const {
    if (!device_fields) return nullptr;
    for (size_t i = 0; i < host->fields.size(); ++i)
      if (host->fields[i].name == name) return &(*device_fields)[i];
    throw Error("batch has no field '" + name + "'");
  }
};

}  // namespace strata
