#include "weft/distributed/rpc/grpc_master_service.h"

#include "weft/distributed/master/master.h"

namespace weft {

GrpcMasterService::GrpcMasterService(Master* master, GrpcCallDispatcher* dispatcher)
    : master_(master) {
  RegisterMasterMethods(dispatcher, master_);
}

}  // namespace weft
