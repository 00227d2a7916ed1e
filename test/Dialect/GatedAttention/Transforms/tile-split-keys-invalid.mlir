// kv-splits and threads out of range are diagnosed, by the pass and by the
// pipeline, with a non-zero exit.
// RUN: not gated-attention-opt %s --gated-attention-tile=kv-splits=0 2>&1 | FileCheck %s --check-prefix=PASS0
// RUN: not gated-attention-opt %s --gated-attention-tile=kv-splits=65 2>&1 | FileCheck %s --check-prefix=PASS65
// RUN: not gated-attention-opt %s --gated-attention-tile=kv-splits=some 2>&1 | FileCheck %s --check-prefix=PASSWORD
// RUN: not gated-attention-opt %s --gated-attention-tile="kv-splits=auto threads=-2" 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not gated-attention-opt %s --gated-attention-to-llvm=kv-splits=0 2>&1 | FileCheck %s --check-prefix=PIPELINE
// RUN: not gated-attention-opt %s --gated-attention-to-llvm=threads=-1 2>&1 | FileCheck %s --check-prefix=PIPETHREADS
// PASS0: error: kv-splits must be 'auto' or a count in [1, 64], got '0'
// PASS65: error: kv-splits must be 'auto' or a count in [1, 64], got '65'
// PASSWORD: error: kv-splits must be 'auto' or a count in [1, 64], got 'some'
// THREADS: error: threads must be 0 (this host's) or positive, got -2
// PIPELINE: option 'kv-splits' must be 'auto' or a count in [1, 64], got '0'
// PIPETHREADS: option 'threads' must be 0 (this host's) or positive, got -1
func.func @f(%q: tensor<1x2x1x8xf32>, %k: tensor<1x2x8x8xf32>,
             %v: tensor<1x2x8x8xf32>) -> tensor<1x2x1x8xf32> {
  %0 = gated_attention.attention %q, %k, %v
      : (tensor<1x2x1x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x1x8xf32>
  return %0 : tensor<1x2x1x8xf32>
}
