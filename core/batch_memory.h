// The memory the loader's batch buffers come from, by the model's device: plain
// host memory for the CPU, page-locked memory (kernels' pinned_host_allocator)
// for a GPU, so that DeviceFeeder's copies run asynchronously on the copy
// stream. apps/ hands it to data/ as LoaderOptions::batch_memory and
// TokenLoaderOptions::batch_memory; data/ sees only HostBufferResource.
#pragma once
#include "core/batch_source.h"
#include "kernels/runtime/device.h"

namespace strata {

// Lives for the process. Device::cuda throws strata::Error (naming why) where
// there is no CUDA device, as pinned_host_allocator() does.
HostBufferResource* batch_memory_for(Device device);

}  // namespace strata
