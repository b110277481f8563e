"""DescribeCluster (60), v0-1: cluster id, controller and live brokers from the image.

Authorized operations are not computed (no ACLs): -2147483648 ("not requested").
"""
API_KEY, MIN_VERSION, MAX_VERSION = 60, 0, 1


def handle(broker, header, request):
    image = broker.image
    return {
        "ErrorCode": 0, "ErrorMessage": None, "EndpointType": 1,
        "ClusterId": image.cluster_id, "ControllerId": broker.node_id,     # KRaft: clients reach the controller through a broker
        "Brokers": [{"BrokerId": b.node_id, "Host": b.host, "Port": b.port, "Rack": b.rack}
                    for b in image.brokers.values() if not b.fenced],
        "ClusterAuthorizedOperations": -2147483648,
    }
