gpu.binary @llvm.kernels [#gpu.object<#nvvm.target<chip = "sm_80">, assembly = ".version 8.0\n.target sm_80\n.address_size 64\n">]
