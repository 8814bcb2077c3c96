"""The built-in framework plug-ins (TensorFlow, PyTorch), registered in repro.manifest.frameworks.FRAMEWORKS.

A module here holds what one framework is to repro at every layer; each layer asks the registry for it. A
new framework is one module like these (a Framework subclass), its workloads' programs, its compatibility
rows (compat.yaml and a compat_module of @rule(framework=...) functions) and one registration line.
"""
