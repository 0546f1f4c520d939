// This platform's id, and models checked against it: dop predict, dop run --auto and the interposer (DOP_CONFIG=auto)
// load their model through load_model_for_platform. Runtime tier.
#pragma once

#include <memory>
#include <string>

#include "dop/cl.hpp"
#include "dop/predictor.hpp"

namespace dop {

/// The id of a platform nobody named, as dop sweep writes it into rows and dop characterize into its record:
/// "<CPU device name> + <GPU device name>" ('-' for a role without a device).
std::string devices_platform_id(const cl::Selection& sel);
/// The same of two device names (a platform record's, dop characterize), empty for a role without a device.
std::string devices_platform_id(const std::string& cpu_name, const std::string& gpu_name);

/// The model file each platform's folder holds in a folder of models (`models/`: models/h100-xeon16/gbt.json, ...).
constexpr const char* kPlatformModelFile = "gbt.json";

/// This platform's model in a folder of models (`models/`): the `kPlatformModelFile` of one of its sub-folders, the
/// first (by name) whose platform id is this platform's named id (`platform_id`, else $DOP_PLATFORM_ID), or, with
/// neither, whose id or record's devices are `sel`'s devices (devices_platform_id). A folder without one throws
/// pred::ModelError naming the platforms it holds and how to make this one's (dop characterize, dop retarget). Only
/// the files whose text names this platform are parsed until one matches (the others only for that error); a corrupt
/// one parsed throws naming its file.
std::string platform_model_in(const std::string& folder, const std::string& platform_id, const cl::Selection& sel);

/// Loads a model (`model_path`; a folder of models: this platform's, platform_model_in) to run on the devices `sel`.
/// This platform's id is `platform_id` (dop's
/// --platform-id), else $DOP_PLATFORM_ID: a model trained for another platform is then refused (pred::ModelError
/// naming both ids). With neither, the platform is assumed to be the devices' own (devices_platform_id), and a model
/// trained under another id whose record named other devices (pred::Platform::devices) is used with a warning on
/// stderr that names both ids (once per call: the interposer loads its model once).
std::shared_ptr<pred::Predictor> load_model_for_platform(const std::string& model_path, const std::string& platform_id,
                                                         const cl::Selection& sel);

}  // namespace dop
